//! The RocksDB backend of [`Kv`].
//!
//! Options (see `engine/STORAGE.md` for the reasoning):
//! - `recycle_log_file_num = 4`: a synced write to a recycled WAL file overwrites allocated
//!   blocks, so `fdatasync` need not update the file size: ~10× more synced writes per second
//!   on this class of disk. Compatible with the default point-in-time WAL recovery.
//! - the `objects` column family is LZ4-compressed (bottommost level too), 16 KiB blocks, with a
//!   shared 64 MiB LRU block cache; the other families are tiny.
//! - 2 background jobs (CI machines have 2 cores); `bytes_per_sync = 1 MiB` smooths flushes.

use super::keys::{ALL_CFS, CF_META, META_REVISION};
use super::kv::{Batch, Flow, Kv, Op, ScanFn};
use crate::{Error, Result};
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, DBCompressionType, Options, ReadOptions, WriteBatch, WriteOptions, DB,
};
use std::path::Path;

/// A RocksDB database holding the store's column families.
pub(crate) struct Rocks {
    db: DB,
}

impl Rocks {
    /// Opens (creating when missing) the database in `dir`.
    pub(crate) fn open(dir: &Path) -> Result<Self> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_recycle_log_file_num(4);
        opts.set_max_background_jobs(2);
        opts.set_bytes_per_sync(1 << 20);
        opts.set_keep_log_file_num(4);
        opts.set_max_total_wal_size(256 << 20);

        let cache = Cache::new_lru_cache(64 << 20);
        let cfs = ALL_CFS.iter().map(|&name| {
            let mut table = BlockBasedOptions::default();
            table.set_block_cache(&cache);
            let mut cf = Options::default();
            if name == super::keys::CF_OBJECTS || name == super::keys::CF_HISTORY {
                table.set_block_size(16 << 10);
                cf.set_compression_type(DBCompressionType::Lz4);
                cf.set_bottommost_compression_type(DBCompressionType::Lz4);
                cf.set_write_buffer_size(64 << 20);
            } else if name == super::keys::CF_OWNERS {
                // Path keys share long prefixes and compress well.
                cf.set_compression_type(DBCompressionType::Lz4);
                cf.set_bottommost_compression_type(DBCompressionType::Lz4);
            } else {
                cf.set_compression_type(DBCompressionType::None);
            }
            cf.set_block_based_table_factory(&table);
            ColumnFamilyDescriptor::new(name, cf)
        });
        let db = DB::open_cf_descriptors(&opts, dir, cfs).map_err(|e| {
            // RocksDB's LOCK file is held by another process: say so rather than pass on
            // "IO error: While lock file: DIR/LOCK: Resource temporarily unavailable".
            if e.kind() == rocksdb::ErrorKind::IOError && e.as_ref().contains("While lock file") {
                Error::InUse { dir: dir.display().to_string() }
            } else {
                Error::Storage(e)
            }
        })?;
        Ok(Rocks { db })
    }

    /// Flushes every column family's memtable: a store closed this way opens without replaying
    /// its write-ahead log (with 20,000 objects, 538 ms of a 560 ms start).
    fn flush_all(&self) -> Result<()> {
        let cfs = ALL_CFS.iter().map(|name| self.cf(name)).collect::<Result<Vec<_>>>()?;
        self.db.flush_cfs_opt(&cfs, &rocksdb::FlushOptions::default())?;
        Ok(())
    }

    fn cf(&self, name: &str) -> Result<&ColumnFamily> {
        self.db.cf_handle(name).ok_or_else(|| Error::Corrupt(format!("missing column family {name}")))
    }
}

impl Rocks {
    /// Calls `f` on each key in `[from, to)` until it stops; blocks read go to the block cache
    /// only with `fill_cache`.
    fn scan_with(&self, cf: &'static str, from: &[u8], to: Option<&[u8]>, fill_cache: bool, f: &mut ScanFn<'_>) -> Result<()> {
        let mut ro = ReadOptions::default();
        ro.fill_cache(fill_cache);
        if let Some(to) = to {
            ro.set_iterate_upper_bound(to.to_vec());
        }
        let mut it = self.db.raw_iterator_cf_opt(self.cf(cf)?, ro);
        it.seek(from);
        while let Some((k, v)) = it.item() {
            if f(k, v)? == Flow::Stop {
                return Ok(());
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }
}

impl Kv for Rocks {
    fn flush(&self) -> Result<()> {
        self.flush_all()
    }

    fn get(&self, cf: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get_pinned_cf(self.cf(cf)?, key)?.map(|v| v.to_vec()))
    }

    fn scan(&self, cf: &'static str, from: &[u8], to: Option<&[u8]>, f: &mut ScanFn<'_>) -> Result<()> {
        self.scan_with(cf, from, to, true, f)
    }

    fn scan_bulk(&self, cf: &'static str, from: &[u8], to: Option<&[u8]>, f: &mut ScanFn<'_>) -> Result<()> {
        // RocksDB's advice for bulk scans: blocks read are not added to the block cache.
        self.scan_with(cf, from, to, false, f)
    }

    fn write(&self, batch: Batch, sync: bool) -> Result<()> {
        let mut wb = WriteBatch::default();
        // Each op is dropped once the batch has copied it: a large write's keys and values are
        // not held twice until the write is done.
        for op in batch.ops {
            match op {
                Op::Put { cf, key, value } => wb.put_cf(self.cf(cf)?, key, value),
                Op::Delete { cf, key } => wb.delete_cf(self.cf(cf)?, key),
                Op::DeleteRange { cf, from, to } => wb.delete_range_cf(self.cf(cf)?, from, to),
            }
        }
        if let Some(rev) = batch.revision {
            wb.put_cf(self.cf(CF_META)?, META_REVISION, rev.to_be_bytes());
        }
        let mut wo = WriteOptions::default();
        wo.set_sync(sync);
        self.db.write_opt(wb, &wo)?;
        Ok(())
    }

    fn revision(&self) -> Result<u64> {
        match self.get(CF_META, META_REVISION)? {
            Some(v) => super::keys::read_u64(&v),
            None => Ok(0),
        }
    }
}
