//! The compile report: what was relaxed, ignored or is known to be inexact.

/// What kind of remark a [`Note`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NoteKind {
    /// An unsupported keyword was ignored because the compiler runs in lenient mode: the
    /// automaton may accept values the schema rejects.
    Relaxed,
    /// A keyword that does not assert anything (unknown keywords are annotations by the
    /// specification, as is `format` in annotation mode) was ignored.
    Ignored,
    /// The automaton accepts exactly the valid documents, but a prefix it accepts may have no
    /// valid completion (a dead end) in this part of the schema.
    DeadEndsPossible,
}

/// One remark about a part of the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// What kind of remark.
    pub kind: NoteKind,
    /// The keyword concerned.
    pub keyword: String,
    /// JSON pointer of the schema object holding the keyword.
    pub pointer: String,
    /// Details.
    pub detail: String,
}

/// What the compiler did besides compiling.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompileReport {
    /// All notes, in schema order.
    pub notes: Vec<Note>,
}

impl CompileReport {
    /// Notes of one kind.
    pub fn of_kind(&self, kind: NoteKind) -> impl Iterator<Item = &Note> {
        self.notes.iter().filter(move |n| n.kind == kind)
    }

    /// Whether the automaton is exact: nothing was relaxed.
    pub fn is_exact(&self) -> bool {
        self.of_kind(NoteKind::Relaxed).next().is_none()
    }
}
