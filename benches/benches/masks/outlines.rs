//! outlines-core: a regular expression from the schema, then its `Index` (the token
//! transitions of every DFA state over the whole vocabulary); a mask is the index's allowed
//! tokens of the current state written into a bitset, as its own bindings do.
//!
//! Building an index can take minutes or all the memory for some schemas, so the engine runs in
//! a worker process (this same binary with `--outlines-worker`) under a memory limit: the parent
//! sends one schema with its token sequences per line, the worker answers `compiled` once the
//! index is built, then the [`SchemaOutcome`] as one JSON line. A worker that does not answer
//! `compiled` in time is killed (the schema counts as a compile timeout) and a new one is started
//! for the next schema.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use benches::peers::{Compile, Engine, SchemaOutcome, run_schema};
use mask_kernel::FixedBitSet;
use outlines_core::index::Index;
use outlines_core::json_schema;
use outlines_core::vocabulary::Vocabulary as OutlinesVocabulary;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use vocab_index::Vocabulary;

/// The line that tells the parent compiling is over.
const COMPILED: &str = "compiled";
/// The line that tells the parent the worker has loaded its vocabulary.
const READY: &str = "ready";

/// The outlines-core engine (runs inside the worker).
pub struct Outlines {
    vocab: OutlinesVocabulary,
    eos: u32,
    mask_len: usize,
}

impl Outlines {
    /// The vocabulary as outlines-core's `from_pretrained` builds it: every token's bytes except
    /// the special tokens, end of sequence apart.
    pub fn new(vocab: &Vocabulary) -> Result<Outlines> {
        let eos = vocab
            .eos_ids()
            .first()
            .context("the tokenizer has no end-of-sequence token")?
            .as_u32();
        let mut v = OutlinesVocabulary::new(eos);
        for (id, bytes) in vocab.iter() {
            if vocab.is_special(id) || id.as_u32() == eos || bytes.is_empty() {
                continue;
            }
            v.try_insert(bytes.to_vec(), id.as_u32())?;
        }
        Ok(Outlines {
            vocab: v,
            eos,
            mask_len: vocab.len(),
        })
    }
}

/// The current state and the last mask.
pub struct Run {
    state: u32,
    mask: FixedBitSet,
}

impl Engine for Outlines {
    type Grammar = Index;
    type Run = Run;

    fn compile(&mut self, schema: &Value) -> Result<Index> {
        let regex = json_schema::regex_from_value(schema, None, None)?;
        let index = Index::new(&regex, &self.vocab);
        // Tell the parent the (possibly long) compile is over, whatever its result.
        let mut out = std::io::stdout().lock();
        writeln!(out, "{COMPILED}")?;
        out.flush()?;
        Ok(index?)
    }

    fn start(&mut self, grammar: &mut Index) -> Result<Run> {
        Ok(Run {
            state: grammar.initial_state(),
            mask: FixedBitSet::with_capacity(self.mask_len),
        })
    }

    fn mask(&mut self, grammar: &mut Index, run: &mut Run) -> Result<()> {
        run.mask.clear();
        let tokens = grammar
            .allowed_tokens_iter(&run.state)
            .ok_or_else(|| anyhow!("no transition from state {}", run.state))?;
        for &t in tokens {
            if (t as usize) < run.mask.len() {
                run.mask.insert(t as usize);
            }
        }
        Ok(())
    }

    fn allows(&self, run: &Run, token: u32) -> bool {
        run.mask.contains(token as usize)
    }

    fn allows_eos(&self, run: &Run) -> bool {
        run.mask.contains(self.eos as usize)
    }

    fn commit(&mut self, grammar: &mut Index, run: &mut Run, token: u32) -> Result<()> {
        run.state = grammar
            .next_state(&run.state, &token)
            .ok_or_else(|| anyhow!("no transition for token {token} from state {}", run.state))?;
        Ok(())
    }
}

/// One schema sent to the worker.
#[derive(Serialize, Deserialize)]
struct Request {
    schema: Value,
    instances: Vec<Vec<u32>>,
}

/// The worker's loop: reads requests from stdin until it closes.
pub fn worker(vocab: &Vocabulary) -> Result<()> {
    let mut engine = Outlines::new(vocab)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{READY}")?;
    out.flush()?;
    drop(out);
    for line in std::io::stdin().lock().lines() {
        let req: Request = serde_json::from_str(&line?)?;
        let outcome = run_schema(&mut engine, &req.schema, &req.instances);
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", serde_json::to_string(&outcome)?)?;
        out.flush()?;
    }
    Ok(())
}

/// A running worker.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

/// The parent side: starts workers, sends schemas, enforces the limits.
pub struct Client {
    exe: PathBuf,
    tokenizer: PathBuf,
    timeout: Duration,
    memory_mib: u64,
    worker: Option<Worker>,
    /// Workers started (the first one included).
    pub restarts: usize,
}

impl Client {
    /// A client that runs `exe --outlines-worker --tokenizer <tokenizer>` under a virtual-memory
    /// limit of `memory_mib`, giving each compile `timeout`.
    pub fn new(exe: PathBuf, tokenizer: &Path, timeout: Duration, memory_mib: u64) -> Client {
        Client {
            exe,
            tokenizer: tokenizer.to_path_buf(),
            timeout,
            memory_mib,
            worker: None,
            restarts: 0,
        }
    }

    fn spawn(&mut self) -> Result<Worker> {
        // `ulimit -v` bounds the worker's address space: an index that does not fit fails its
        // allocation and ends the worker instead of the machine.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"ulimit -v "$1" && exec "$2" --outlines-worker --tokenizer "$3""#)
            .arg("sh")
            .arg((self.memory_mib * 1024).to_string())
            .arg(&self.exe)
            .arg(&self.tokenizer)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the outlines worker")?;
        let stdin = child.stdin.take().context("worker stdin")?;
        let stdout = child.stdout.take().context("worker stdout")?;
        let (tx, rx) = channel();
        // The reader only waits on the pipe; the measured work happens in the worker.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut w = Worker {
            child,
            stdin,
            lines: rx,
        };
        match w.lines.recv_timeout(Duration::from_secs(300)) {
            Ok(l) if l == READY => {}
            Ok(l) => bail!("outlines worker said {l:?} instead of {READY:?}"),
            Err(_) => {
                let _ = w.child.kill();
                let status = w.child.wait()?;
                bail!("outlines worker did not start ({status})");
            }
        }
        self.restarts += 1;
        Ok(w)
    }

    fn kill(&mut self) -> String {
        match self.worker.take() {
            Some(mut w) => {
                let _ = w.child.kill();
                match w.child.wait() {
                    Ok(s) => s.to_string(),
                    Err(e) => e.to_string(),
                }
            }
            None => String::new(),
        }
    }

    /// Runs one schema in the worker.
    pub fn run(&mut self, schema: &Value, instances: &[Vec<u32>]) -> Result<SchemaOutcome> {
        if self.worker.is_none() {
            self.worker = Some(self.spawn()?);
        }
        let w = self.worker.as_mut().context("no worker")?;
        let req = serde_json::to_string(&Request {
            schema: schema.clone(),
            instances: instances.to_vec(),
        })?;
        let sent = Instant::now();
        if writeln!(w.stdin, "{req}")
            .and_then(|()| w.stdin.flush())
            .is_err()
        {
            let status = self.kill();
            return Ok(SchemaOutcome::failed(Compile::Error {
                message: format!("worker ended before the schema was sent ({status})"),
            }));
        }
        // First line: `compiled` (or the outcome at once, when no regex could be made).
        let first = match w.lines.recv_timeout(self.timeout) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => {
                self.kill();
                return Ok(SchemaOutcome::failed(Compile::Timeout {
                    message: format!("no index after {:.0} s", self.timeout.as_secs_f64()),
                }));
            }
            Err(RecvTimeoutError::Disconnected) => {
                let secs = sent.elapsed().as_secs_f64();
                let status = self.kill();
                return Ok(SchemaOutcome::failed(Compile::Timeout {
                    message: format!(
                        "worker ended after {secs:.1} s while compiling ({status}; memory limit {} MiB)",
                        self.memory_mib
                    ),
                }));
            }
        };
        let line = if first == COMPILED {
            // The replay is table lookups; a generous limit only guards against a hang.
            match w.lines.recv_timeout(Duration::from_secs(600)) {
                Ok(l) => l,
                Err(_) => {
                    let status = self.kill();
                    return Ok(SchemaOutcome::failed(Compile::Error {
                        message: format!("worker did not finish the replay ({status})"),
                    }));
                }
            }
        } else {
            first
        };
        serde_json::from_str(&line).with_context(|| format!("reading the worker's answer {line:?}"))
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(mut w) = self.worker.take() {
            // Closing stdin ends the worker's loop.
            drop(w.stdin);
            let _ = w.child.wait();
        }
    }
}
