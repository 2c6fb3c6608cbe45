//! The byte-level constraints of a tool-calling turn: calls laid out in a [`CallLayout`],
//! guarded free text, and their union for `tool_choice: auto`.
//!
//! All three implement [`Recognizer`] exactly (a byte is accepted only when some
//! continuation is complete), so the mask kernel drives them like a JSON Schema: with
//! [`ToolRecognizer`] in auto mode the model chooses between text and a call token by
//! token, and a call, once its opening is written, can only be finished as the schema says.

use std::sync::Arc;

use mask_kernel::{Recognizer, Split};
use schema_compiler::{Grammar, Matcher};

/// How calls are laid out around their JSON objects.
///
/// A turn is `prefix JSON suffix (separator prefix JSON suffix)*` with at most `max_calls`
/// objects; each JSON object is one document of the call grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallLayout {
    /// Bytes before each JSON object (e.g. `<tool_call>\n`).
    pub prefix: Vec<u8>,
    /// Bytes after each JSON object (e.g. `\n</tool_call>`).
    pub suffix: Vec<u8>,
    /// Bytes between two calls (e.g. `\n`).
    pub separator: Vec<u8>,
    /// Whether the separator may be left out. A whitespace separator should be: the decode
    /// loop ends a complete turn when only whitespace could follow it.
    pub separator_optional: bool,
    /// Most JSON objects in a turn (at least 1).
    pub max_calls: usize,
}

/// Phase of a [`CallSequence`]. `Open(0)` after a call is the accepting rest state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// In the opening literal (the prefix for the first call, separator + prefix after).
    Open(usize),
    /// In a JSON object.
    Json,
    /// In the suffix.
    Close(usize),
}

/// The characters after a backslash in a JSON string, other than `u`.
const SHORT_ESCAPES: [u8; 8] = [b'"', b'\\', b'/', b'b', b'f', b'n', b'r', b't'];

#[derive(Debug, Clone, Copy)]
struct Step {
    phase: Phase,
    calls: usize,
    matchers: usize,
    escape: bool,
    into_matcher: bool,
}

/// Tool calls laid out in a [`CallLayout`], each JSON object recognized by a call grammar.
///
/// A JSON object ends at its closing brace: the call grammar's top-level value must be an
/// object (whitespace after it belongs to the suffix, not to the object).
///
/// Strings in calls cannot use `\u` escapes (characters are written as themselves; only the
/// control characters without a short escape become unreachable), and a backslash is taken
/// only when a short escape (`\"`, `\n`, ...) can follow it: the schema matcher accepts a
/// backslash and the hex digits of a `\u` escape before checking that the character fits the
/// string's schema, so an escape could start a key or an `enum` value that cannot be finished.
#[derive(Debug, Clone)]
pub struct CallSequence {
    grammar: Arc<Grammar>,
    layout: Arc<CallLayout>,
    /// The opening literal after the first call: separator then prefix.
    again: Vec<u8>,
    phase: Phase,
    calls: usize,
    /// The last byte was a backslash starting an escape inside a string.
    escape: bool,
    /// One matcher per call started, the current one last.
    matchers: Vec<Matcher>,
    journal: Vec<Step>,
}

impl CallSequence {
    /// A sequence at the start of a turn.
    ///
    /// # Panics
    ///
    /// When `max_calls` is 0, or when several calls are allowed and nothing separates them
    /// (empty separator and prefix): both are programming errors, not user input.
    pub fn new(grammar: Arc<Grammar>, layout: Arc<CallLayout>) -> CallSequence {
        assert!(
            layout.max_calls >= 1,
            "a call layout allows at least one call"
        );
        let mut again = layout.separator.clone();
        again.extend_from_slice(&layout.prefix);
        assert!(
            layout.max_calls == 1 || !again.is_empty(),
            "several calls need a separator or a prefix"
        );
        let mut s = CallSequence {
            grammar,
            layout,
            again,
            phase: Phase::Open(0),
            calls: 0,
            escape: false,
            matchers: Vec::new(),
            journal: Vec::new(),
        };
        s.settle();
        s
    }

    /// Calls completed so far.
    pub fn calls(&self) -> usize {
        self.calls
    }

    fn open_literal(&self) -> &[u8] {
        if self.calls == 0 {
            &self.layout.prefix
        } else {
            &self.again
        }
    }

    /// Moves past literals that are complete (entering a JSON object starts a matcher).
    fn settle(&mut self) {
        loop {
            match self.phase {
                Phase::Open(pos) if pos == self.open_literal().len() && !self.accepting_rest() => {
                    self.matchers.push(Matcher::new(self.grammar.clone()));
                    self.phase = Phase::Json;
                }
                Phase::Close(pos) if pos == self.layout.suffix.len() => {
                    self.calls += 1;
                    self.phase = Phase::Open(0);
                }
                _ => return,
            }
        }
    }

    /// In the rest state after a call (where the turn may end).
    fn accepting_rest(&self) -> bool {
        self.phase == Phase::Open(0) && self.calls > 0
    }

    fn push(&mut self, byte: u8) -> bool {
        let step = Step {
            phase: self.phase,
            calls: self.calls,
            matchers: self.matchers.len(),
            escape: self.escape,
            into_matcher: false,
        };
        match self.phase {
            Phase::Open(pos) => {
                if self.calls >= self.layout.max_calls {
                    return false;
                }
                let skip = self.layout.separator.len();
                let next = if self.open_literal().get(pos) == Some(&byte) {
                    pos + 1
                } else if pos == 0
                    && self.calls > 0
                    && self.layout.separator_optional
                    && skip > 0
                    && self.again.get(skip) == Some(&byte)
                {
                    skip + 1
                } else {
                    return false;
                };
                self.journal.push(step);
                self.phase = Phase::Open(next);
            }
            Phase::Json => {
                let m = self
                    .matchers
                    .last_mut()
                    .expect("a matcher in a JSON object");
                let in_string = m.in_string();
                if (self.escape && byte == b'u') || !m.try_push_byte(byte) {
                    return false;
                }
                let starts_escape = in_string && !self.escape && byte == b'\\';
                // The matcher takes a backslash before knowing whether any escaped character
                // fits; take it only when a short escape does.
                if starts_escape
                    && !SHORT_ESCAPES.iter().any(|&e| {
                        let ok = m.try_push_byte(e);
                        if ok {
                            m.pop_bytes(1);
                        }
                        ok
                    })
                {
                    m.pop_bytes(1);
                    return false;
                }
                let done = m.is_accepting();
                self.journal.push(Step {
                    into_matcher: true,
                    ..step
                });
                self.escape = starts_escape;
                if done {
                    self.phase = Phase::Close(0);
                }
            }
            Phase::Close(pos) => {
                if self.layout.suffix.get(pos) != Some(&byte) {
                    return false;
                }
                self.journal.push(step);
                self.phase = Phase::Close(pos + 1);
            }
        }
        self.settle();
        true
    }

    fn pop(&mut self, n: usize) {
        for _ in 0..n {
            let Some(step) = self.journal.pop() else {
                return;
            };
            self.matchers.truncate(step.matchers);
            if step.into_matcher {
                self.matchers
                    .last_mut()
                    .expect("the matcher that took the byte")
                    .pop_bytes(1);
            }
            self.phase = step.phase;
            self.calls = step.calls;
            self.escape = step.escape;
        }
    }

    fn key(&self, key: &mut Vec<u32>) {
        let (tag, pos) = match self.phase {
            Phase::Open(p) => (0, p),
            Phase::Json => (1, 0),
            Phase::Close(p) => (2, p),
        };
        key.extend([
            tag,
            pos as u32,
            (self.calls > 0) as u32,
            (self.calls < self.layout.max_calls) as u32,
            self.escape as u32,
        ]);
        if self.phase == Phase::Json {
            self.matchers
                .last()
                .expect("a matcher in a JSON object")
                .state_key(key);
        }
    }

    fn completion(&mut self, max_len: usize) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let mut ok = true;
        while !self.accepting_rest() {
            if out.len() > max_len {
                ok = false;
                break;
            }
            let next: Vec<u8> = match self.phase {
                Phase::Open(pos) => vec![self.open_literal()[pos]],
                Phase::Close(pos) => vec![self.layout.suffix[pos]],
                Phase::Json => match self
                    .matchers
                    .last_mut()
                    .expect("a matcher in a JSON object")
                    .completion(max_len.saturating_sub(out.len()))
                {
                    Some(b) if !b.is_empty() => b,
                    _ => {
                        ok = false;
                        break;
                    }
                },
            };
            let before = out.len();
            for b in next {
                if !self.push(b) {
                    ok = false;
                    break;
                }
                out.push(b);
            }
            if !ok || out.len() == before {
                ok = false;
                break;
            }
        }
        self.pop(out.len());
        (ok && out.len() <= max_len).then_some(out)
    }

    fn json_matcher(&self) -> Option<&Matcher> {
        (self.phase == Phase::Json)
            .then(|| self.matchers.last())
            .flatten()
    }
}

impl Recognizer for CallSequence {
    fn try_push_byte(&mut self, byte: u8) -> bool {
        self.push(byte)
    }

    fn pop_bytes(&mut self, n: usize) {
        self.pop(n)
    }

    fn is_accepting(&self) -> bool {
        self.accepting_rest()
    }

    fn state_key(&self, key: &mut Vec<u32>) -> bool {
        self.key(key);
        true
    }

    fn describe(&self) -> String {
        match self.json_matcher() {
            Some(m) => format!("tool call {}: {}", self.calls + 1, m.describe()),
            None => format!("tool calls: {:?} after {} calls", self.phase, self.calls),
        }
    }

    fn split(&self, key: &mut Vec<u32>) -> Option<Split> {
        let m = self.json_matcher()?;
        let start = key.len();
        key.extend([u32::MAX, self.escape as u32]);
        match m.split(key)? {
            Split::Walk => Some(Split::Walk),
            // The kernel's precomputed string-content sets allow `\u` escapes, which calls do
            // not: walk instead, keyed by the whole state.
            Split::StringContent { .. } | Split::KeyContent => {
                key.truncate(start);
                key.extend([u32::MAX - 1, self.escape as u32]);
                m.state_key(key);
                Some(Split::Walk)
            }
        }
    }

    fn completion(&mut self, max_len: usize) -> Option<Vec<u8>> {
        CallSequence::completion(self, max_len)
    }

    fn set_lexeme_only(&mut self, on: bool) {
        if self.phase == Phase::Json
            && let Some(m) = self.matchers.last_mut()
        {
            m.set_lexeme_only(on);
        }
    }
}

/// Where a [`TextGuard`] is in its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lead {
    /// Only whitespace so far.
    Blank,
    /// After leading whitespace, this many bytes of the call opening.
    Opening(usize),
    /// Past the point where the text could turn into a call.
    Free,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TextState {
    lead: Lead,
    /// Bytes of the marker matched at the end of the text (KMP state).
    marker: usize,
}

/// Free text that is not a tool call: it does not begin (after whitespace) with the call
/// opening, does not contain the marker anywhere (when there is one), and has at least one
/// byte that is not whitespace.
#[derive(Debug, Clone)]
pub struct TextGuard {
    opening: Vec<u8>,
    marker: Vec<u8>,
    /// KMP failure function of `marker`.
    fail: Vec<usize>,
    state: TextState,
    undo: Vec<TextState>,
}

impl TextGuard {
    /// Text that may not start with `opening` (after whitespace) nor contain `marker`
    /// (empty: no marker rule).
    pub fn new(opening: &[u8], marker: &[u8]) -> TextGuard {
        let mut fail = vec![0; marker.len()];
        let mut k = 0;
        for i in 1..marker.len() {
            while k > 0 && marker[i] != marker[k] {
                k = fail[k - 1];
            }
            if marker[i] == marker[k] {
                k += 1;
            }
            fail[i] = k;
        }
        TextGuard {
            opening: opening.to_vec(),
            marker: marker.to_vec(),
            fail,
            state: TextState {
                lead: Lead::Blank,
                marker: 0,
            },
            undo: Vec::new(),
        }
    }

    fn next(&self, byte: u8) -> Option<TextState> {
        let mut s = self.state;
        s.lead = match s.lead {
            Lead::Blank if matches!(byte, b' ' | b'\t' | b'\n' | b'\r') => Lead::Blank,
            Lead::Blank => self.open_step(0, byte)?,
            Lead::Opening(n) => self.open_step(n, byte)?,
            Lead::Free => Lead::Free,
        };
        if !self.marker.is_empty() {
            let mut k = s.marker;
            while k > 0 && self.marker[k] != byte {
                k = self.fail[k - 1];
            }
            if self.marker[k] == byte {
                k += 1;
            }
            if k == self.marker.len() {
                return None;
            }
            s.marker = k;
        }
        Some(s)
    }

    fn open_step(&self, n: usize, byte: u8) -> Option<Lead> {
        if self.opening.get(n) == Some(&byte) {
            if n + 1 == self.opening.len() {
                None
            } else {
                Some(Lead::Opening(n + 1))
            }
        } else {
            Some(Lead::Free)
        }
    }
}

impl Recognizer for TextGuard {
    fn try_push_byte(&mut self, byte: u8) -> bool {
        match self.next(byte) {
            Some(s) => {
                self.undo.push(self.state);
                self.state = s;
                true
            }
            None => false,
        }
    }

    fn pop_bytes(&mut self, n: usize) {
        for _ in 0..n {
            match self.undo.pop() {
                Some(s) => self.state = s,
                None => return,
            }
        }
    }

    fn is_accepting(&self) -> bool {
        self.state.lead != Lead::Blank
    }

    fn state_key(&self, key: &mut Vec<u32>) -> bool {
        let (tag, n) = match self.state.lead {
            Lead::Blank => (0, 0),
            Lead::Opening(n) => (1, n),
            Lead::Free => (2, 0),
        };
        key.extend([tag, n as u32, self.state.marker as u32]);
        true
    }

    fn describe(&self) -> String {
        format!("text ({:?})", self.state.lead)
    }

    fn completion(&mut self, _max_len: usize) -> Option<Vec<u8>> {
        if self.is_accepting() {
            return Some(Vec::new());
        }
        [b'.', b'-', b'x']
            .into_iter()
            .find(|&b| self.next(b).is_some())
            .map(|b| vec![b])
    }
}

/// The text branch of a [`ToolRecognizer`]: free text under a [`TextGuard`], or a JSON
/// document of a schema (a `response_format` given together with tools).
#[derive(Debug, Clone)]
enum TextBranch {
    Guard(TextGuard),
    Schema(Box<Matcher>),
}

impl TextBranch {
    fn inner(&self) -> &dyn Recognizer {
        match self {
            TextBranch::Guard(g) => g,
            TextBranch::Schema(s) => s.as_ref(),
        }
    }

    fn inner_mut(&mut self) -> &mut dyn Recognizer {
        match self {
            TextBranch::Guard(g) => g,
            TextBranch::Schema(s) => s.as_mut(),
        }
    }
}

/// Which branches a [`ToolRecognizer`] has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Branches {
    /// Only text (`tool_choice: none`).
    Text,
    /// Only calls (`required` or a named tool).
    Calls,
    /// Text or calls (`auto`).
    Either,
}

/// The constraint of one tool-calling turn: guarded text, calls, or the union of both.
///
/// In [`Branches::Either`] both branches read every byte while they are alive; a byte is
/// accepted when at least one branch accepts it. The text branch refuses the call opening,
/// so once the opening is complete only the call branch is left, and the turn must end as a
/// complete call: there are no half-formed calls.
#[derive(Debug, Clone)]
pub struct ToolRecognizer {
    text: TextBranch,
    calls: Option<CallSequence>,
    text_alive: bool,
    calls_alive: bool,
    /// Per byte: which branches were alive before it.
    journal: Vec<(bool, bool)>,
}

impl ToolRecognizer {
    /// A recognizer with the given branches. `calls` is required unless `branches` is
    /// [`Branches::Text`].
    ///
    /// # Panics
    ///
    /// When `branches` needs calls and `calls` is `None` (a programming error).
    pub fn new(branches: Branches, text: TextGuard, calls: Option<CallSequence>) -> Self {
        let calls_alive = branches != Branches::Text;
        assert!(
            !calls_alive || calls.is_some(),
            "the call branch needs a call sequence"
        );
        ToolRecognizer {
            text: TextBranch::Guard(text),
            calls,
            text_alive: branches != Branches::Calls,
            calls_alive,
            journal: Vec::new(),
        }
    }

    /// A recognizer whose text answers are JSON documents of `text`'s schema instead of
    /// guarded free text. In [`Branches::Either`] both branches read every byte, so an answer
    /// and a call may share their first bytes (`{` in the JSON formats) and the first byte
    /// that only one allows decides.
    ///
    /// # Panics
    ///
    /// As [`ToolRecognizer::new`].
    pub fn with_schema_text(
        branches: Branches,
        text: Matcher,
        calls: Option<CallSequence>,
    ) -> Self {
        let mut r = ToolRecognizer::new(branches, TextGuard::new(b"", b""), calls);
        r.text = TextBranch::Schema(Box::new(text));
        r
    }

    /// Whether the text so far can still be (part of) a text answer.
    pub fn text_alive(&self) -> bool {
        self.text_alive
    }

    /// Whether the text so far can still be (part of) a call.
    pub fn calls_alive(&self) -> bool {
        self.calls_alive
    }

    fn only_calls(&self) -> Option<&CallSequence> {
        (!self.text_alive && self.calls_alive)
            .then_some(self.calls.as_ref())
            .flatten()
    }
}

impl Recognizer for ToolRecognizer {
    fn try_push_byte(&mut self, byte: u8) -> bool {
        let t = self.text_alive && self.text.inner_mut().try_push_byte(byte);
        let c = self.calls_alive
            && self
                .calls
                .as_mut()
                .is_some_and(|calls| calls.try_push_byte(byte));
        if !t && !c {
            return false;
        }
        self.journal.push((self.text_alive, self.calls_alive));
        self.text_alive = t;
        self.calls_alive = c;
        true
    }

    fn pop_bytes(&mut self, n: usize) {
        for _ in 0..n {
            let Some((t, c)) = self.journal.pop() else {
                return;
            };
            if self.text_alive {
                self.text.inner_mut().pop_bytes(1);
            }
            if self.calls_alive
                && let Some(calls) = self.calls.as_mut()
            {
                calls.pop_bytes(1);
            }
            self.text_alive = t;
            self.calls_alive = c;
        }
    }

    fn is_accepting(&self) -> bool {
        (self.text_alive && self.text.inner().is_accepting())
            || (self.calls_alive && self.calls.as_ref().is_some_and(|c| c.is_accepting()))
    }

    fn state_key(&self, key: &mut Vec<u32>) -> bool {
        key.push(((self.text_alive as u32) << 1) | self.calls_alive as u32);
        if self.text_alive && !self.text.inner().state_key(key) {
            return false;
        }
        if self.calls_alive
            && let Some(c) = &self.calls
        {
            c.key(key);
        }
        true
    }

    fn describe(&self) -> String {
        match (self.text_alive, &self.calls) {
            (true, Some(c)) if self.calls_alive => {
                format!("{} or {}", self.text.inner().describe(), c.describe())
            }
            (true, _) => self.text.inner().describe(),
            (false, Some(c)) => c.describe(),
            (false, None) => "nothing".into(),
        }
    }

    fn split(&self, key: &mut Vec<u32>) -> Option<Split> {
        self.only_calls()?.split(key)
    }

    fn completion(&mut self, max_len: usize) -> Option<Vec<u8>> {
        if self.text_alive && self.text.inner().is_accepting() {
            return Some(Vec::new());
        }
        if self.calls_alive
            && let Some(c) = self.calls.as_mut()
            && let Some(bytes) = c.completion(max_len)
        {
            return Some(bytes);
        }
        if self.text_alive {
            return self.text.inner_mut().completion(max_len);
        }
        None
    }

    fn set_lexeme_only(&mut self, on: bool) {
        if !self.text_alive
            && self.calls_alive
            && let Some(c) = self.calls.as_mut()
        {
            c.set_lexeme_only(on);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::{Tool, ToolFormat};
    use schema_compiler::{Options, Whitespace};

    fn tools() -> Vec<Tool> {
        vec![
            Tool::new(
                "calculator",
                "Arithmetic.",
                json!({
                    "type": "object",
                    "properties": {"expression": {"type": "string"}},
                    "required": ["expression"],
                    "additionalProperties": false
                }),
            ),
            Tool::new(
                "weather",
                "Weather in a city.",
                json!({
                    "type": "object",
                    "properties": {
                        "city": {"type": "string"},
                        "unit": {"enum": ["c", "f"]}
                    },
                    "required": ["city"],
                    "additionalProperties": false
                }),
            ),
        ]
    }

    fn recognizer(format: ToolFormat, branches: Branches) -> ToolRecognizer {
        let tools = tools();
        let refs: Vec<&Tool> = tools.iter().collect();
        let schema = format.call_schema(&refs, usize::MAX);
        // Whitespace between a call's tokens is what several tests below exercise: the
        // flexible policy (generation's default is compact).
        let options = Options::generation().whitespace(Whitespace::Flexible {
            max_newlines: 1,
            max_spaces: 16,
        });
        let grammar = Arc::new(Grammar::compile(&schema, &options).unwrap());
        let calls = CallSequence::new(grammar, Arc::new(format.layout(usize::MAX)));
        let text = TextGuard::new(format.opening().as_bytes(), format.marker().as_bytes());
        ToolRecognizer::new(branches, text, Some(calls))
    }

    /// Pushes `s` byte by byte; `Err(i)` at the first refused byte (the bytes before it stay).
    fn feed(r: &mut impl Recognizer, s: &str) -> Result<(), usize> {
        for (i, &b) in s.as_bytes().iter().enumerate() {
            if !r.try_push_byte(b) {
                return Err(i);
            }
        }
        Ok(())
    }

    fn key(r: &impl Recognizer) -> Vec<u32> {
        let mut k = Vec::new();
        assert!(r.state_key(&mut k));
        k
    }

    /// Whether `s` is accepted whole and leaves a complete turn.
    fn complete(format: ToolFormat, branches: Branches, s: &str) -> bool {
        let mut r = recognizer(format, branches);
        feed(&mut r, s).is_ok() && r.is_accepting()
    }

    /// Where `s` is first refused.
    fn refused_at(format: ToolFormat, branches: Branches, s: &str) -> Option<usize> {
        feed(&mut recognizer(format, branches), s).err()
    }

    const CALL: &str =
        r#"{"tool_calls":[{"name":"calculator","arguments":{"expression":"1234 * 5678"}}]}"#;

    #[test]
    fn auto_accepts_text() {
        use Branches::Either;
        let f = ToolFormat::JsonEnvelope;
        assert!(complete(f, Either, "The answer is 7006652."));
        assert!(complete(f, Either, "\n  Sure: {\"a\": 1} is JSON"));
        assert!(complete(f, Either, "x{"));
        // Whitespace alone is not an answer, but it can still become one.
        assert!(!complete(f, Either, " \n"));
        assert!(complete(f, Either, " \nok"));
        let mut r = recognizer(f, Either);
        feed(&mut r, "Hello").unwrap();
        assert!(r.text_alive() && !r.calls_alive());
        assert_eq!(r.completion(8), Some(Vec::new()));
    }

    #[test]
    fn auto_accepts_valid_calls() {
        use Branches::Either;
        let f = ToolFormat::JsonEnvelope;
        assert!(complete(f, Either, CALL));
        assert!(complete(f, Either, &format!("\n{CALL}")));
        // Arguments first, whitespace inside, two calls in one turn.
        assert!(complete(
            f,
            Either,
            r#"{"tool_calls": [{"arguments": {"city": "Paris"}, "name": "weather"}, {"name": "calculator", "arguments": {"expression": "2"}}]}"#
        ));
        let mut r = recognizer(f, Either);
        feed(&mut r, CALL).unwrap();
        assert!(!r.text_alive() && r.calls_alive() && r.is_accepting());
        // Nothing may follow the call but the end of the turn.
        assert!(!r.try_push_byte(b'x'));
        assert!(!r.try_push_byte(b'{'));
    }

    #[test]
    fn auto_rejects_half_formed_calls() {
        use Branches::Either;
        let f = ToolFormat::JsonEnvelope;
        // A prefix of a call is alive but not complete, and the text branch is gone: the turn
        // cannot end here.
        let mut r = recognizer(f, Either);
        feed(&mut r, r#"{"tool_calls":[{"name":"calculator""#).unwrap();
        assert!(!r.is_accepting() && !r.text_alive());
        assert!(!complete(f, Either, "{"));
        // Text may not start with the opening, and a call may not leave its schema.
        assert_eq!(refused_at(f, Either, r#"{"answer": 42}"#), Some(2));
        assert_eq!(refused_at(f, Either, r#"{"tool_calls":[]}"#), Some(15));
        assert_eq!(
            refused_at(f, Either, r#"{"tool_calls":[{"name":"nope"#),
            Some(24)
        );
        assert_eq!(
            refused_at(
                f,
                Either,
                r#"{"tool_calls":[{"name":"calculator","arguments":{"expression":5"#
            ),
            Some(62)
        );
        assert_eq!(
            refused_at(
                f,
                Either,
                r#"{"tool_calls":[{"name":"weather","arguments":{"city":"Oslo","unit":"k"#
            ),
            Some(68)
        );
        // The completion of a half call is a valid call.
        let mut r = recognizer(f, Either);
        feed(
            &mut r,
            r#"{"tool_calls":[{"name":"weather","arguments":{"ci"#,
        )
        .unwrap();
        let tail = r.completion(256).expect("a completion");
        let text = format!(
            r#"{{"tool_calls":[{{"name":"weather","arguments":{{"ci{}"#,
            String::from_utf8(tail).unwrap()
        );
        assert!(complete(f, Either, &text), "{text}");
    }

    #[test]
    fn required_and_none() {
        let f = ToolFormat::JsonEnvelope;
        assert!(complete(f, Branches::Calls, CALL));
        assert_eq!(refused_at(f, Branches::Calls, "Hello"), Some(0));
        assert!(complete(f, Branches::Text, "Hello"));
        assert_eq!(refused_at(f, Branches::Text, CALL), Some(0));
        assert_eq!(refused_at(f, Branches::Text, "  {"), Some(2));
    }

    #[test]
    fn hermes_blocks() {
        use Branches::Either;
        let f = ToolFormat::Hermes;
        let one = "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}}\n</tool_call>";
        let two = format!(
            "{one}\n<tool_call>\n{{\"name\": \"weather\", \"arguments\": {{\"city\": \"Lima\"}}}}\n</tool_call>"
        );
        assert!(complete(f, Either, one));
        assert!(complete(f, Either, &two));
        assert!(complete(f, Branches::Calls, &two));
        // The newline between blocks may be left out.
        assert!(complete(f, Either, &format!("{one}{one}")));
        // A call whose string argument contains the closing tag is still one call.
        assert!(complete(
            f,
            Either,
            "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"</tool_call>\"}}\n</tool_call>"
        ));
        assert!(complete(f, Either, "Plain text <tool"));
        assert!(complete(f, Either, "<tool_cal"));
        assert_eq!(refused_at(f, Either, "Now: <tool_call>"), Some(15));
        assert_eq!(refused_at(f, Either, " <tool_call>"), Some(11));
        assert!(!complete(f, Either, "<tool_call>"));
        assert!(!complete(f, Either, &one[..one.len() - 1]));
        assert_eq!(
            refused_at(f, Either, &format!("{one}\n\n")),
            Some(one.len() + 1)
        );
    }

    #[test]
    fn llama3_single_call() {
        let f = ToolFormat::Llama3Json;
        let call = r#"{"name": "weather", "parameters": {"city": "Rome", "unit": "c"}}"#;
        assert!(complete(f, Branches::Either, call));
        assert_eq!(
            refused_at(f, Branches::Either, &format!("{call}{call}")),
            Some(call.len())
        );
        assert_eq!(
            refused_at(f, Branches::Calls, r#"{"name": "weather", "arguments""#),
            Some(21)
        );
    }

    /// Popping bytes restores the state exactly: the key after `prefix` equals the key after
    /// `prefix + rest` popped back, and acceptance matches.
    #[test]
    fn pop_restores_every_prefix() {
        let cases = [
            (ToolFormat::JsonEnvelope, CALL.to_string()),
            (ToolFormat::JsonEnvelope, "Some text, then more.".to_string()),
            (
                ToolFormat::Hermes,
                "<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Lima\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1\"}}\n</tool_call>".to_string(),
            ),
        ];
        for (format, text) in cases {
            let mut keys = Vec::new();
            let mut accepting = Vec::new();
            let mut r = recognizer(format, Branches::Either);
            keys.push(key(&r));
            accepting.push(r.is_accepting());
            for (i, &b) in text.as_bytes().iter().enumerate() {
                assert!(r.try_push_byte(b), "{format:?}: byte {i} of {text:?}");
                keys.push(key(&r));
                accepting.push(r.is_accepting());
            }
            assert!(r.is_accepting());
            for n in (0..text.len()).rev() {
                r.pop_bytes(1);
                assert_eq!(key(&r), keys[n], "{format:?}: after popping to {n}");
                assert_eq!(r.is_accepting(), accepting[n]);
            }
            // Pop several at once, then push again.
            feed(&mut r, &text).unwrap();
            r.pop_bytes(text.len() / 2);
            assert_eq!(key(&r), keys[text.len() - text.len() / 2]);
            feed(&mut r, &text[text.len() - text.len() / 2..]).unwrap();
            assert!(r.is_accepting());
        }
    }

    /// `\u` escapes are refused (the schema matcher would take the hex digits of one that
    /// cannot become a valid key); other escapes are fine.
    #[test]
    fn no_unicode_escapes_in_calls() {
        let f = ToolFormat::JsonEnvelope;
        let start = r#"{"tool_calls":[{"name":"calculator","arguments":{""#;
        // No key of this tool starts with an escaped character.
        assert_eq!(
            refused_at(f, Branches::Calls, &format!(r#"{start}\u0065"#)),
            Some(start.len())
        );
        assert!(complete(
            f,
            Branches::Calls,
            r#"{"tool_calls":[{"name":"calculator","arguments":{"expression":"a\\u\"b\n"}}]}"#
        ));
        let value = r#"{"tool_calls":[{"name":"calculator","arguments":{"expression":""#;
        assert_eq!(
            refused_at(f, Branches::Calls, &format!(r#"{value}a\\\u"#)),
            Some(value.len() + 4)
        );
    }

    #[test]
    fn text_guard_marker_overlaps() {
        // KMP: the marker is found after a partial match that restarts inside itself.
        let mut g = TextGuard::new(b"", b"abab");
        assert_eq!(feed(&mut g, "xababab"), Err(4));
        let mut g = TextGuard::new(b"", b"aab");
        assert_eq!(feed(&mut g, "aaab"), Err(3));
    }
}
