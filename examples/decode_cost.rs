//! Decodes the FieldsV1 set of the `fields_v1` bench (a manager owning 10,000 list items of five
//! fields) a few times, for instruction-count profiling of the two decoders, where wall-clock
//! timing is too noisy:
//! `valgrind --tool=callgrind --toggle-collect='fieldstore_codec::fields_binary::decode' decode_cost bin 5`.
//!
//! Usage: `decode_cost bin|json [REPS]`.
#![allow(clippy::unwrap_used, reason = "a measurement whose setup fails has nothing to measure: it stops there")]
#![allow(missing_docs)]

use fieldstore::codec::{fields_binary, fields_v1, Path, PathElement, Set};
use serde_json::json;
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
fn main() {
    let n = 10_000;
    let items = Path::fields(["spec", "items"]);
    let mut set = Set::new();
    for i in 0..n {
        let item = items.child(PathElement::key(vec![("name".into(), json!(format!("item-{i}")))]));
        set.insert(&item);
        for f in ["name", "image", "value", "port", "flag"] {
            set.insert(&item.child(PathElement::field(f)));
        }
    }
    let bin = fields_binary::encode(&set);
    let js = fields_v1::to_json(&set);
    let which = std::env::args().nth(1).unwrap_or_default();
    let reps: usize = std::env::args().nth(2).map_or(5, |s| s.parse().unwrap());
    for _ in 0..reps {
        let s = if which == "json" { fields_v1::from_json(&js).unwrap() } else { fields_binary::decode(&bin).unwrap() };
        std::hint::black_box(&s);
        std::mem::forget(s);
    }
}
