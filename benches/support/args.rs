//! Command-line arguments of the harness = false benches: section names (which parts to run)
//! and `--key value` flags (`--key` alone for the boolean flags a bench names).

use std::collections::HashMap;

/// Parsed arguments.
pub struct Args {
    /// The sections asked for, or the bench's defaults.
    pub sections: Vec<String>,
    flags: HashMap<String, String>,
}

impl Args {
    /// Parses `std::env::args`, skipping cargo's `--bench`; `booleans` take no value.
    pub fn parse(defaults: &[&str], booleans: &[&str]) -> Args {
        let mut sections = Vec::new();
        let mut flags = HashMap::new();
        let mut it = std::env::args().skip(1);
        while let Some(a) = it.next() {
            if a == "--bench" {
                continue; // cargo bench passes it to every harness = false bench
            }
            if let Some(k) = a.strip_prefix("--") {
                let v = if booleans.contains(&k) { "1".to_string() } else { it.next().unwrap_or_else(|| panic!("--{k} needs a value")) };
                flags.insert(k.to_string(), v);
            } else {
                sections.push(a);
            }
        }
        if sections.is_empty() {
            sections = defaults.iter().map(|s| s.to_string()).collect();
        }
        Args { sections, flags }
    }

    /// A numeric flag.
    pub fn num(&self, k: &str, default: usize) -> usize {
        self.flags.get(k).map_or(default, |v| v.parse().unwrap_or_else(|_| panic!("--{k}: not a number: {v}")))
    }

    /// A text flag.
    #[allow(dead_code)]
    pub fn text(&self, k: &str) -> Option<&str> {
        self.flags.get(k).map(String::as_str)
    }

    /// Whether a boolean flag is given.
    #[allow(dead_code)]
    pub fn on(&self, k: &str) -> bool {
        self.flags.contains_key(k)
    }

    /// Whether a section is asked for.
    #[allow(dead_code)]
    pub fn has(&self, section: &str) -> bool {
        self.sections.iter().any(|s| s == section)
    }
}
