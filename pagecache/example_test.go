package pagecache_test

import (
	"fmt"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/pagecache"
)

// A buffered write dirties pages; writeback walks the dirty pages in index
// order with a tagged lookup and starts writing them, as
// write_cache_pages does.
func Example() {
	c, err := pagecache.New(pagecache.Options{LimitPages: 1024})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	const ino = pagecache.InodeID(42)
	for _, idx := range []int64{7, 3, 5} {
		p, err := c.Add(ino, idx) // locked, not uptodate
		if err != nil {
			panic(err)
		}
		p.SetStamp(blockdev.Stamp{Writer: 1, Seq: uint64(idx)}) // the write's data
		p.SetUptodate()
		p.SetDirty()
		p.Unlock()
	}
	fmt.Println("dirty:", c.Dirty(), "of inode:", c.InodeDirtyPages(ino))

	c.RangeTagged(ino, 0, pagecache.MaxIndex, pagecache.TagDirty, func(p *pagecache.Page) bool {
		p.Lock()
		p.ClearDirtyForIO()
		p.SetWriteback()
		p.Unlock()
		fmt.Println("write page", p.Index(), "stamp", p.Stamp().Seq)
		return true
	})
	fmt.Println("dirty:", c.Dirty(), "writeback:", c.Writeback())
	// Output:
	// dirty: 3 of inode: 3
	// write page 3 stamp 3
	// write page 5 stamp 5
	// write page 7 stamp 7
	// dirty: 0 writeback: 3
}

// The readahead windows of a sequential 4 KiB reader.
func ExampleReadahead() {
	r := pagecache.Readahead{MaxPages: pagecache.DefaultReadaheadPages}
	ra := pagecache.NewRAState()
	w := r.Sync(&ra, 0, 1) // the first read misses
	fmt.Printf("sync  %+v\n", w)
	for range 3 {
		w = r.Async(&ra, w.Marker, 1) // the reader reaches the marker
		fmt.Printf("async %+v\n", w)
	}
	// Output:
	// sync  {Start:0 Count:4 Marker:1}
	// async {Start:4 Count:8 Marker:4}
	// async {Start:12 Count:16 Marker:12}
	// async {Start:28 Count:32 Marker:28}
}

// Runs turns a window into one bio per physically contiguous run.
func ExampleRuns() {
	blocks := []int64{100, 101, 102, 340, 341, -1, 103} // -1: a hole
	for _, r := range pagecache.Runs(0, int64(len(blocks)), func(i int64) int64 { return blocks[i] }) {
		fmt.Printf("bio: pages %d-%d at block %d\n", r.Index, r.Index+r.Pages-1, r.Block)
	}
	// Output:
	// bio: pages 0-2 at block 100
	// bio: pages 3-4 at block 340
	// bio: pages 6-6 at block 103
}
