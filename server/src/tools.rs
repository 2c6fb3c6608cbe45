//! Chat completions with tools: one turn of [`Generator::generate_tool_turn`], its reply
//! turned into OpenAI `tool_calls` or text.
//!
//! A streaming request sees the turn as it is generated: [`TurnReader`] reads the raw text of
//! the turn in the model's [`ToolFormat`] and tells, as soon as it can, whether it is text or
//! calls; text goes out as content deltas, and each call as its start (index, id, name) then
//! fragments of its arguments, the JSON text the model writes. The parsed reply at the end
//! decides the answer; whatever of it the deltas did not carry (a call closed by the budget)
//! is sent then.

use std::sync::atomic::Ordering;

use generate::template::inject_schema;
use generate::tools::{Reply, ToolFormat, TurnOptions};
use generate::{GenerateError, Generator, Model};

use crate::error::ApiError;
use crate::openai::{Answer, CallOut};
use crate::worker::{Event, Finished, Logprobs, Shared, StopGuard, Work, finish, fit_context};

/// Runs a request that has tools.
pub(crate) fn run<M: Model>(
    generator: &mut Generator<M>,
    work: &Work,
    shared: &Shared,
    queue_ms: f64,
    sink: &Logprobs,
    reasoning: Option<generate::Reasoning>,
) -> Result<Finished, ApiError> {
    let plan = &work.plan;
    let err = |e: GenerateError| ApiError::from_generate(&e);
    let (tools, choice) = (&plan.tools, &plan.tool_choice);
    // A response format with tools: calls follow their tools' schemas, a text answer this
    // schema, which goes into the prompt as it does without tools.
    let mut messages = plan.messages.clone();
    if let Some(schema) = &plan.schema {
        inject_schema(&mut messages, schema, &plan.schema_in_prompt);
    }
    // Errors in the tools (a bad name, a schema that does not compile, an unknown named
    // tool) come out here, before anything is streamed.
    generator.check_tools(tools).map_err(err)?;
    let n_prompt = generator
        .tool_prompt(&messages, tools, choice)
        .map_err(err)?
        .len();
    let mut options = fit_context(generator, &plan.options, n_prompt)?;
    options.reasoning = reasoning;
    let _ = work.events.send(Event::Started);

    let events = &work.events;
    let stream = plan.stream;
    let mut reader = TurnReader::new(
        generator.tool_format(),
        plan.tool_choice_mode(),
        plan.schema.is_some(),
    );
    let mut guard = StopGuard::new(&plan.options.stop);
    let mut sent_calls: Vec<SentCall> = Vec::new();
    let send = |d: TurnDelta, guard: &mut StopGuard, sent: &mut Vec<SentCall>| -> bool {
        let event = match d {
            TurnDelta::Text(t) => match guard.push(&t) {
                Some(t) => Event::Delta(t),
                None => return true,
            },
            TurnDelta::CallStart { index, name } => {
                let id = crate::http::call_id();
                sent.push(SentCall {
                    id: id.clone(),
                    arguments: String::new(),
                });
                Event::CallStart { index, id, name }
            }
            TurnDelta::Arguments { index, fragment } => {
                if let Some(c) = sent.get_mut(index) {
                    c.arguments.push_str(&fragment);
                }
                Event::CallArguments { index, fragment }
            }
        };
        events.send(event).is_ok()
    };
    let mut on_text = |piece: &str| {
        if shared.cancel_all.load(Ordering::Relaxed) {
            return false;
        }
        if !stream {
            return !events.is_closed();
        }
        sink.drain(events);
        for d in reader.push(piece) {
            if !send(d, &mut guard, &mut sent_calls) {
                return false;
            }
        }
        !events.is_closed()
    };
    let turn = TurnOptions {
        max_calls: plan.max_calls,
        prefill: None,
        text_schema: plan.schema.as_ref().map(|s| {
            if plan.loose_format {
                schema_compiler::any_order(s)
            } else {
                s.clone()
            }
        }),
    };
    // The thinking goes out as it is generated, before the turn.
    let mut on_reasoning = |piece: &str| {
        if shared.cancel_all.load(Ordering::Relaxed) {
            return false;
        }
        if stream {
            events.send(Event::Reasoning(piece.to_string())).is_ok()
        } else {
            !events.is_closed()
        }
    };
    let (reply, out) = generator
        .generate_tool_turn_thinking(
            messages,
            tools,
            choice,
            &turn,
            options,
            &mut on_reasoning,
            &mut on_text,
        )
        .map_err(err)?;
    sink.drain(events);
    let logprobs = sink.whole(&out);
    let mut done = match reply {
        Reply::Calls(calls) => {
            let calls: Vec<CallOut> = calls
                .into_iter()
                .enumerate()
                .map(|(i, c)| {
                    let mut out = CallOut {
                        id: c.id,
                        name: c.name,
                        arguments: c.arguments.get().to_string(),
                    };
                    if stream {
                        out.id = send_rest(events, i, &out, sent_calls.get(i));
                    }
                    out
                })
                .collect();
            let mut done = finish(out, |_| Answer::Calls(calls), shared, queue_ms, None)?;
            // A call cut off by the budget is closed by the constraint: still a call.
            done.finish_reason = "tool_calls";
            done.text_streamed = stream;
            done
        }
        Reply::Text(text) => {
            if stream && text.len() > guard.sent() && text.starts_with(guard.sent_text()) {
                let _ = events.send(Event::Delta(text[guard.sent()..].to_string()));
            }
            let mut done = finish(out, |_| Answer::Text(text), shared, queue_ms, None)?;
            // Whatever was held back went out above.
            done.text_streamed = stream;
            done
        }
    };
    done.logprobs = logprobs;
    Ok(done)
}

/// A call as far as it was streamed.
struct SentCall {
    id: String,
    /// The argument text sent.
    arguments: String,
}

/// Sends what the deltas of call `index` lack (all of it if it was not started), and returns
/// its id.
fn send_rest(
    events: &tokio::sync::mpsc::UnboundedSender<Event>,
    index: usize,
    call: &CallOut,
    sent: Option<&SentCall>,
) -> String {
    let arguments = call.arguments.clone();
    let (id, rest) = match sent {
        Some(s) => {
            let read = |t: &str| serde_json::from_str::<serde_json::Value>(t).ok();
            let done = s.arguments == arguments
                || read(&s.arguments).is_some_and(|v| read(&arguments) == Some(v));
            let rest = match arguments.strip_prefix(s.arguments.as_str()) {
                _ if done => "",
                Some(rest) => rest,
                None => "",
            };
            (s.id.clone(), rest.to_string())
        }
        None => {
            let id = crate::http::call_id();
            let _ = events.send(Event::CallStart {
                index,
                id: id.clone(),
                name: call.name.clone(),
            });
            (id, arguments)
        }
    };
    if !rest.is_empty() {
        let _ = events.send(Event::CallArguments {
            index,
            fragment: rest,
        });
    }
    id
}

/// Which kinds of reply a turn may give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Text only.
    Text,
    /// Calls only.
    Calls,
    /// Either: the first bytes decide.
    Either,
}

/// What a streamed turn has shown so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TurnDelta {
    /// A piece of a text answer (leading whitespace dropped).
    Text(String),
    /// Call `index` starts: its name is known.
    CallStart { index: usize, name: String },
    /// A piece of call `index`'s arguments (JSON text).
    Arguments { index: usize, fragment: String },
}

/// Reads the raw text of a tool turn, piece by piece, into [`TurnDelta`]s.
///
/// Calls are compact JSON objects (`{"name":…,"<arguments key>":…}`), inside the envelope's
/// `tool_calls` array for [`ToolFormat::JsonEnvelope`], or each in its own block: the reader
/// follows the JSON nesting, takes each object at the call depth as a call, reads its name and
/// passes the text of its arguments on as it comes. Arguments written before the name wait for
/// it.
pub(crate) struct TurnReader {
    opening: &'static str,
    args_key: &'static str,
    /// The nesting depth of call objects.
    call_depth: usize,
    /// Undecided text (mode `Either`, before the first bytes tell).
    pending: String,
    decided: Option<bool>,
    text_started: bool,
    depth: usize,
    in_string: bool,
    escape: bool,
    /// The string being read at the call depth.
    string: String,
    expect_key: bool,
    key: String,
    /// The value being read at the call depth is the name.
    reading_name: bool,
    /// Reading the arguments' value.
    in_args: bool,
    calls: usize,
    name: Option<String>,
    /// Argument text not yet sent (waiting for the name, or for the end of the piece).
    args: String,
}

impl TurnReader {
    /// A reader for a turn in `format`; `json_answer`: a text answer is a JSON document (a
    /// response format with tools), told from the envelope's calls by its first key.
    pub(crate) fn new(format: ToolFormat, mode: Mode, json_answer: bool) -> TurnReader {
        TurnReader {
            opening: match format {
                ToolFormat::JsonEnvelope if json_answer => "{\"tool_calls\"",
                _ => format.opening(),
            },
            args_key: format.arguments_key(),
            call_depth: match format {
                ToolFormat::JsonEnvelope => 3,
                _ => 1,
            },
            pending: String::new(),
            decided: match mode {
                Mode::Text => Some(false),
                Mode::Calls => Some(true),
                Mode::Either => None,
            },
            text_started: false,
            depth: 0,
            in_string: false,
            escape: false,
            string: String::new(),
            expect_key: false,
            key: String::new(),
            reading_name: false,
            in_args: false,
            calls: 0,
            name: None,
            args: String::new(),
        }
    }

    /// Reads a piece; returns what it shows.
    pub(crate) fn push(&mut self, piece: &str) -> Vec<TurnDelta> {
        let mut out = Vec::new();
        let text = match self.decided {
            Some(_) if self.pending.is_empty() => piece.to_string(),
            _ => {
                self.pending.push_str(piece);
                if self.decided.is_none() {
                    let t = self.pending.trim_start();
                    if t.is_empty() || (self.opening.starts_with(t) && t != self.opening) {
                        return out;
                    }
                    self.decided = Some(t.starts_with(self.opening));
                }
                std::mem::take(&mut self.pending)
            }
        };
        if self.decided == Some(false) {
            // Leading whitespace is not part of the answer.
            let t = if self.text_started {
                text.as_str()
            } else {
                text.trim_start()
            };
            if !t.is_empty() {
                self.text_started = true;
                out.push(TurnDelta::Text(t.to_string()));
            }
            return out;
        }
        for c in text.chars() {
            self.step(c, &mut out);
        }
        self.flush_args(&mut out);
        out
    }

    fn flush_args(&mut self, out: &mut Vec<TurnDelta>) {
        if self.name.is_some() && !self.args.is_empty() {
            out.push(TurnDelta::Arguments {
                index: self.calls - 1,
                fragment: std::mem::take(&mut self.args),
            });
        }
    }

    fn step(&mut self, c: char, out: &mut Vec<TurnDelta>) {
        let at_call = self.depth == self.call_depth;
        if self.in_args {
            let ends = !self.in_string && at_call && (c == ',' || c == '}');
            if !ends {
                if !(self.args.is_empty() && c.is_whitespace() && !self.in_string) {
                    self.args.push(c);
                }
                self.track(c);
                return;
            }
            self.in_args = false;
            self.flush_args(out);
        }
        if self.in_string {
            if self.escape {
                self.escape = false;
                if at_call {
                    self.string.push(c);
                }
            } else if c == '\\' {
                self.escape = true;
            } else if c == '"' {
                self.in_string = false;
                if at_call {
                    let s = std::mem::take(&mut self.string);
                    if self.expect_key {
                        self.key = s;
                    } else if self.reading_name {
                        self.reading_name = false;
                        self.name = Some(s.clone());
                        out.push(TurnDelta::CallStart {
                            index: self.calls - 1,
                            name: s,
                        });
                        self.flush_args(out);
                    }
                }
            } else if at_call {
                self.string.push(c);
            }
            return;
        }
        match c {
            '"' => {
                self.in_string = true;
                self.string.clear();
            }
            '{' | '[' => {
                self.depth += 1;
                if c == '{' && self.depth == self.call_depth {
                    self.calls += 1;
                    self.name = None;
                    self.args.clear();
                    self.expect_key = true;
                }
            }
            '}' | ']' => self.depth = self.depth.saturating_sub(1),
            ',' if at_call => self.expect_key = true,
            ':' if at_call => {
                self.expect_key = false;
                if self.key == self.args_key {
                    self.in_args = true;
                } else {
                    self.reading_name = self.key == "name";
                }
            }
            _ => {}
        }
    }

    /// Follows strings and nesting inside the arguments.
    fn track(&mut self, c: char) {
        if self.in_string {
            if self.escape {
                self.escape = false;
            } else if c == '\\' {
                self.escape = true;
            } else if c == '"' {
                self.in_string = false;
            }
            return;
        }
        match c {
            '"' => self.in_string = true,
            '{' | '[' => self.depth += 1,
            '}' | ']' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` in pieces of `n` bytes (on character boundaries) and gathers the calls
    /// `(name, arguments)` and the text.
    fn read(
        format: ToolFormat,
        mode: Mode,
        text: &str,
        n: usize,
    ) -> (Vec<(String, String)>, String) {
        read_as(format, mode, false, text, n)
    }

    /// As [`read`]; `json`: a text answer is JSON.
    fn read_as(
        format: ToolFormat,
        mode: Mode,
        json: bool,
        text: &str,
        n: usize,
    ) -> (Vec<(String, String)>, String) {
        let mut r = TurnReader::new(format, mode, json);
        let mut calls: Vec<(String, String)> = Vec::new();
        let mut answer = String::new();
        let chars: Vec<char> = text.chars().collect();
        for chunk in chars.chunks(n) {
            let piece: String = chunk.iter().collect();
            for d in r.push(&piece) {
                match d {
                    TurnDelta::Text(t) => answer.push_str(&t),
                    TurnDelta::CallStart { index, name } => {
                        assert_eq!(index, calls.len());
                        calls.push((name, String::new()));
                    }
                    TurnDelta::Arguments { index, fragment } => calls[index].1.push_str(&fragment),
                }
            }
        }
        (calls, answer)
    }

    #[test]
    fn reads_calls_in_every_format_and_piece_size() {
        let cases = [
            (
                ToolFormat::JsonEnvelope,
                r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Pa\"ris","n":{"name":[1,2]}}},{"name":"now","arguments":{}}]}"#,
            ),
            (
                ToolFormat::Hermes,
                "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Pa\\\"ris\",\"n\":{\"name\":[1,2]}}}\n</tool_call>\n<tool_call>\n{\"name\":\"now\",\"arguments\":{}}\n</tool_call>",
            ),
        ];
        for (format, text) in cases {
            for n in [1, 2, 3, 7, 1000] {
                for mode in [Mode::Calls, Mode::Either] {
                    let (calls, answer) = read(format, mode, text, n);
                    assert_eq!(answer, "", "{format:?} {n}");
                    assert_eq!(
                        calls,
                        vec![
                            (
                                "get_weather".to_string(),
                                r#"{"city":"Pa\"ris","n":{"name":[1,2]}}"#.to_string()
                            ),
                            ("now".to_string(), "{}".to_string()),
                        ],
                        "{format:?} {n}"
                    );
                }
            }
        }
        // Llama 3's key, and arguments written before the name.
        let (calls, _) = read(
            ToolFormat::Llama3Json,
            Mode::Calls,
            r#"{"parameters":{"a":"}"},"name":"f"}"#,
            2,
        );
        assert_eq!(calls, vec![("f".to_string(), r#"{"a":"}"}"#.to_string())]);
    }

    #[test]
    fn text_is_told_from_calls_by_its_first_bytes() {
        let (calls, answer) = read(ToolFormat::Hermes, Mode::Either, "  <tool", 1);
        assert!(calls.is_empty() && answer.is_empty());
        let (calls, answer) = read(ToolFormat::Hermes, Mode::Either, " <to say {\"a\"}", 1);
        assert!(calls.is_empty());
        assert_eq!(answer, "<to say {\"a\"}");
        let (_, answer) = read(ToolFormat::JsonEnvelope, Mode::Text, "{not a call}", 3);
        assert_eq!(answer, "{not a call}");
        // A JSON answer next to the envelope's calls: the first key tells.
        let (calls, answer) = read_as(
            ToolFormat::JsonEnvelope,
            Mode::Either,
            true,
            r#"{"tool":1}"#,
            1,
        );
        assert!(calls.is_empty());
        assert_eq!(answer, r#"{"tool":1}"#);
        let call = r#"{"tool_calls":[{"name":"f","arguments":{}}]}"#;
        let (calls, answer) = read_as(ToolFormat::JsonEnvelope, Mode::Either, true, call, 1);
        assert_eq!(calls, vec![("f".to_string(), "{}".to_string())]);
        assert!(answer.is_empty());
    }
}
