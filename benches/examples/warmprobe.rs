use generate::SchemaRecognizer;
use mask_kernel::{Kernel, MaskCache, Recognizer, Session};
use schema_compiler::{Grammar, Options};
use std::sync::Arc;
use std::time::Instant;
use vocab_index::{TrieKind, Vocabulary};
fn main() {
    let tok = std::env::args().nth(1).unwrap();
    let vocab =
        Arc::new(Vocabulary::from_file(format!("assets/tokenizers/{tok}/tokenizer.json")).unwrap());
    let kernel = Arc::new(Kernel::new(vocab, TrieKind::Flat).unwrap());
    let g = Arc::new(
        Grammar::compile(
            &serde_json::json!({"type":"object","properties":{"name":{"type":"string"}}}),
            &Options::generation(),
        )
        .unwrap(),
    );
    let mut s = Session::new(kernel.clone(), SchemaRecognizer::new(g));
    for &b in br#"{"name":"Ada"# {
        assert!(s.recognizer_mut().try_push_byte(b));
    }
    let mut mask = s.new_mask();
    let mut cache = MaskCache::default();
    s.mask(&mut cache, &mut mask).unwrap();
    let t = Instant::now();
    for _ in 0..10000 {
        s.mask(&mut cache, &mut mask).unwrap();
    }
    println!("warm {:?}", t.elapsed() / 10000);
    let t = Instant::now();
    let mut n = 0;
    for _ in 0..10000 {
        n += mask.count_ones(..);
    }
    println!(
        "count_ones {:?} {n} len {}",
        t.elapsed() / 10000,
        mask.len()
    );
    let mut key = Vec::new();
    let t = Instant::now();
    for _ in 0..10000 {
        key.clear();
        s.recognizer().state_key(&mut key);
    }
    println!("state_key {:?} len {}", t.elapsed() / 10000, key.len());
    use vocab_index::VocabIndex;
    println!(
        "trie nodes {} quote nodes {}",
        kernel.trie().num_nodes(),
        kernel.quote_trie().num_nodes()
    );
    let mut cold = MaskCache::new(0);
    let t = Instant::now();
    let mut st = None;
    for _ in 0..20000 {
        st = Some(s.mask(&mut cold, &mut mask).unwrap());
    }
    println!("cold {:?} {:?}", t.elapsed() / 20000, st);
}
#[allow(dead_code)]
fn unused() {}
