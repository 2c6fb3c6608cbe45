//! JSON Schema to an exact byte-level automaton with a stack for nesting.
