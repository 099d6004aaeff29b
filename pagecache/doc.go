// Package pagecache models the Linux page cache: 4 KiB pages with the
// kernel's page flags (PG_uptodate, PG_dirty, PG_writeback, PG_locked,
// PG_referenced, PG_active, PG_readahead), a per-inode index ordered by
// page offset with the tagged lookups write_cache_pages uses (dirty,
// writeback, towrite), the global and per-inode counters the writeback
// code reads (NR_FILE_DIRTY, NR_WRITEBACK, NR_DIRTIED, NR_WRITTEN), a hard
// memory limit with eviction, and the kernel's on-demand readahead
// (readahead.go).
//
// # Guarantees
//
// The cache never holds more than Options.LimitPages pages, and eviction
// never drops a page that is dirty, under writeback or locked. When every
// page is pinned that way, Cache.Add fails with ErrNoMemory and creates
// nothing: the caller (the filesystem's write or read path) must wait for
// writeback, as a task in direct reclaim would. Both guarantees hold for
// every eviction policy.
//
// # Eviction policies
//
// "lru" (the default) is the kernel's two-list LRU (mm/vmscan.c,
// mm/swap.c): new pages start on the inactive list, a second access
// activates them, reclaim takes the inactive tail and rotates pinned pages
// back to the head, and the inactive list is refilled from the active tail
// while inactive_is_low. It is fully deterministic.
//
// "tinylfu" asks github.com/dgraph-io/ristretto/v2 which clean pages to
// keep: its TinyLFU admission filter and sampled-LFU eviction decide, this
// package's own index stays authoritative, so the guarantees above still
// hold. Ristretto is concurrent: it runs internal goroutines and buffers
// and drops access records under its own timing, so runs with "tinylfu"
// are NOT deterministic (the same seed may evict different pages); under
// the race detector, whose sync.Pool drops objects at random, ristretto
// sees almost none of the accesses and admits nearly everything. Close the
// Cache to stop ristretto's goroutines.
//
// # Concurrency and model rules
//
// A Cache is not safe for concurrent use: it belongs to one simulation,
// which runs on one goroutine (DESIGN.md section 2). The package itself has
// no goroutines, channels, sync, wall clock or global randomness, and no
// decision depends on map iteration order.
//
// # Model bugs panic
//
// Invalid page state transitions (SetWriteback on a page that is not
// locked, Remove of a dirty page, Unlock of an unlocked page, ...) are bugs
// in the model that calls this package, not conditions a simulated program
// can cause, so they panic with a message naming the page and the rule,
// the way the kernel's VM_BUG_ON_FOLIO does. Conditions a simulated program
// can cause (memory exhausted, a page that already exists) are errors.
package pagecache
