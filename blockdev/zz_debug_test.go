package blockdev

import (
	"fmt"
	"os"
	"testing"

	"github.com/blksim/blksim/internal/tomlkv"
)

func TestZZDebugHDD(t *testing.T) {
	data, _ := os.ReadFile("../testdata/devices/hdd-7200.toml")
	kv, _ := tomlkv.Parse("x", data)
	vals := map[string]ProfileValue{}
	for k, v := range kv {
		vals[k] = ProfileValue{Text: v.Text, Where: "x"}
	}
	e := newEngine(t)
	dev, err := NewFromProfile(e, vals)
	if err != nil {
		t.Fatal(err)
	}
	rd := newRecDev(e, dev)
	q, err := NewQueue(e, rd, QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	log := newBioLog(e)
	var next func(i int64)
	next = func(i int64) {
		if i == 10 {
			return
		}
		b := &Bio{Op: OpRead, Sector: i * 1024, Bytes: 512 * KiB}
		log.submit(q, b)
		at(e, 0, func() {})
		_ = b
	}
	for i := int64(0); i < 10; i++ {
		b := &Bio{Op: OpRead, Sector: i * 1024, Bytes: 512 * KiB}
		at(e, 0, func() {})
		log.submitAt(q, 0, b)
		run(t, e)
		fmt.Println(i, log.ends[b][0].At)
	}
	fmt.Println(rd.dispatched)
	_ = next
}
