//! Where a store lives: a data directory (RocksDB, the default) or an etcd cluster, chosen by
//! the command line's `--data DIR` or `--etcd URL,URL,… [--etcd-prefix /fieldstore]`.

use fieldstore_engine::store::{Options, Store};
use std::fmt;
use std::path::PathBuf;

/// The default key prefix of a store in etcd.
pub const DEFAULT_ETCD_PREFIX: &str = "/fieldstore";

/// Where a store lives.
#[derive(Debug, Clone)]
pub enum Location {
    /// A RocksDB data directory of this machine, owned by one process.
    Data(PathBuf),
    /// An etcd cluster (client URLs) and the key prefix of the store in it; several processes
    /// may open it at once.
    Etcd {
        /// Client URLs of the members (`http://127.0.0.1:2379`).
        endpoints: Vec<String>,
        /// The key prefix.
        prefix: String,
    },
}

impl Location {
    /// The etcd location when `etcd` lists endpoints (comma-separated), else the directory.
    #[must_use]
    pub fn new(data: PathBuf, etcd: Option<&str>, prefix: &str) -> Location {
        match etcd {
            Some(list) => Location::Etcd {
                endpoints: list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect(),
                prefix: prefix.to_string(),
            },
            None => Location::Data(data),
        }
    }

    /// Opens the store there.
    ///
    /// # Errors
    /// As [`Store::open`] or [`Store::open_etcd`].
    pub fn open(&self, options: Options) -> fieldstore_engine::Result<Store> {
        match self {
            Location::Data(dir) => Store::open(dir, options),
            Location::Etcd { endpoints, prefix } => Store::open_etcd(endpoints, prefix, options),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Data(dir) => write!(f, "data {}", dir.display()),
            Location::Etcd { endpoints, prefix } => write!(f, "etcd {} prefix {prefix}", endpoints.join(",")),
        }
    }
}
