//! How the in-memory layout of a value decides how the apply bench's objects scale from 10k to
//! 50k items: parse, deep copy and equality of the bench's list, as `serde_json::Value` (a
//! B-tree node of 11 slots per object, a heap string per key) and as a compact layout (an
//! object is one boxed slice of entries). Minimum of `REPS` warm runs, ms.
//!
//! Usage: `value_layout [list|listrand]`.
#![allow(missing_docs)]

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::hint::black_box;
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../benches/support/shapes.rs"]
mod shapes;
use shapes::{config, Shape};

/// A compact JSON value: an object is one allocation of its entries, in document order.
#[derive(Clone, PartialEq, Debug)]
enum Compact {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Box<str>),
    Arr(Box<[Compact]>),
    Obj(Box<[(Box<str>, Compact)]>),
}

impl<'de> Deserialize<'de> for Compact {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Compact;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Compact, E> {
                Ok(Compact::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Compact, E> {
                Ok(Compact::Bool(b))
            }
            fn visit_i64<E>(self, i: i64) -> Result<Compact, E> {
                Ok(Compact::Int(i))
            }
            fn visit_u64<E>(self, u: u64) -> Result<Compact, E> {
                Ok(i64::try_from(u).map_or(Compact::Float(u as f64), Compact::Int))
            }
            fn visit_f64<E>(self, f: f64) -> Result<Compact, E> {
                Ok(Compact::Float(f))
            }
            fn visit_str<E>(self, s: &str) -> Result<Compact, E> {
                Ok(Compact::Str(s.into()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Compact, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(Compact::Arr(v.into_boxed_slice()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Compact, A::Error> {
                let mut v: Vec<(Box<str>, Compact)> = Vec::with_capacity(8);
                while let Some((k, x)) = a.next_entry::<String, Compact>()? {
                    v.push((k.into_boxed_str(), x));
                }
                Ok(Compact::Obj(v.into_boxed_slice()))
            }
        }
        d.deserialize_any(V)
    }
}

fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let shape = if std::env::args().nth(1).as_deref() == Some("listrand") { Shape::ListRand } else { Shape::List };
    let reps: usize = std::env::var("REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(15);
    let mut rows: Vec<(String, [f64; 2])> = Vec::new();
    for (slot, n) in [10_000usize, 50_000].into_iter().enumerate() {
        let body = serde_json::to_vec(&config(shape, n, None)).expect("ser");
        let (a, b): (Value, Value) = (serde_json::from_slice(&body).expect("p"), serde_json::from_slice(&body).expect("p"));
        let (ca, cb): (Compact, Compact) = (serde_json::from_slice(&body).expect("p"), serde_json::from_slice(&body).expect("p"));
        let timings = [
            ("serde_json parse", best(reps, || drop(black_box(serde_json::from_slice::<Value>(&body).expect("p"))))),
            ("serde_json clone", best(reps, || drop(black_box(a.clone())))),
            ("serde_json equal", best(reps, || assert!(black_box(&a) == black_box(&b)))),
            ("compact parse", best(reps, || drop(black_box(serde_json::from_slice::<Compact>(&body).expect("p"))))),
            ("compact clone", best(reps, || drop(black_box(ca.clone())))),
            ("compact equal", best(reps, || assert!(black_box(&ca) == black_box(&cb)))),
        ];
        for (i, (name, t)) in timings.into_iter().enumerate() {
            if slot == 0 {
                rows.push((name.to_string(), [t, 0.0]));
            } else {
                rows[i].1[1] = t;
            }
        }
    }
    for (name, [t10, t50]) in rows {
        println!("{name:18} 10k {t10:7.2} ms  50k {t50:7.2} ms  50k/10k {:5.2}", t50 / t10);
    }
}
