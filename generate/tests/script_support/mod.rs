//! What the scripted test models share: a model that "wants" to write a text has the logits
//! of [`plain_logits`], with the token that continues its text raised by [`favour`].

use std::sync::Arc;

use generate::Tokenizer;
use vocab_index::TokenId;

/// Logit 1 for tokens of plain printable ASCII (what a scripted model falls back to when the
/// constraint refuses its script), 0 for the others.
pub fn plain_logits(tok: &Arc<Tokenizer>) -> Vec<f32> {
    (0..tok.vocab().len())
        .map(|i| {
            let b = tok.token_bytes(TokenId::new(i as u32).unwrap());
            let ok = !b.is_empty() && b.iter().all(|&c| (b' '..=b'~').contains(&c) && c != b'\\');
            if ok { 1.0 } else { 0.0 }
        })
        .collect()
}

/// Logit 30 for the first token of what is left of `script` after `written` (end of sequence
/// once it is all written); nothing when `written` is not a prefix of it.
pub fn favour(tok: &Tokenizer, script: &str, written: &[u8], logits: &mut [f32]) {
    let Some(rest) = script.as_bytes().strip_prefix(written) else {
        return;
    };
    let next = match std::str::from_utf8(rest) {
        Ok("") => tok.vocab().eos_ids().first().map(|t| t.as_u32()),
        Ok(rest) => tok.encode(rest, false).unwrap().first().map(|t| t.as_u32()),
        Err(_) => None,
    };
    if let Some(t) = next {
        logits[t as usize] = 30.0;
    }
}
