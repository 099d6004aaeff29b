package workload

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics, that every error it returns is
// a *ParseError with a line and one of the documented sentinels, and that
// every job it returns satisfies JobSpec's documented invariants.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"",
		"[job]\n",
		"[global]\nbs=4k,8k\nrw=randrw:4\n[a]\nrwmixwrite=30\nsize=1KiB\n",
		"[j]\nbs=${BS}\nfilename=${X}${\nruntime=10m\nramp_time=1d\n",
		"[j] ; c\n thread = 1 # c\r\ndirect\nbuffered=1\ntime_based\n",
		"[j]\nioengine=libaio\niodepth=64\n",
		"[global]\niodepth_batch=0\n[j]\nioengine=io_uring\niodepth=8\niodepth_batch_complete=4\niodepth_low=2\n",
		"[j]\nsize=0x7fffffffffffffff\nrandseed=0xffff\nnumjobs=4096\n",
		"bs=4k\n[j]\n",
		"[global-x]\nname=g\n[j]\nname=n\n",
		"[j]\nsize=(1+2)\nnumjobs=$ncpus\n",
		"[j\n",
		"[]\n",
		"[j]\n=x\ninclude a b\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	paths, _ := filepath.Glob(filepath.Join(examplesDir, "*.fio"))
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err == nil {
			f.Add(data)
		}
	}

	env := func(k string) (string, bool) {
		switch k {
		case "BS":
			return "4k", true
		case "X":
			return "${BS}", true
		}
		return "", false
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, err := Parse("fuzz.fio", bytes.NewReader(data), env)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error is %T, not *ParseError: %v", err, err)
			}
			if pe.File != "fuzz.fio" || pe.Line < 1 {
				t.Fatalf("error names %s:%d: %v", pe.File, pe.Line, err)
			}
			n := 0
			for _, k := range []error{ErrSyntax, ErrUnknownOption, ErrBadValue, ErrNotModelled} {
				if errors.Is(err, k) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("error wraps %d sentinels: %v", n, err)
			}
			if jobs != nil {
				t.Fatalf("jobs returned with an error")
			}
			_ = err.Error()
			return
		}
		if len(jobs) == 0 {
			t.Fatal("no jobs and no error")
		}
		for _, js := range jobs {
			switch {
			case js.Line < 1 || js.File != "fuzz.fio":
				t.Fatalf("job %q at %s:%d", js.Name, js.File, js.Line)
			case js.BS[0] <= 0 || js.BS[1] <= 0:
				t.Fatalf("job %q bs %v", js.Name, js.BS)
			case js.Size < 0:
				t.Fatalf("job %q size %d", js.Name, js.Size)
			case js.NumJobs < 1 || js.NumJobs > maxJobs:
				t.Fatalf("job %q numjobs %d", js.Name, js.NumJobs)
			case js.IODepth < 1 || syncEngines[js.IOEngine] && js.IODepth != 1:
				t.Fatalf("job %q iodepth %d with engine %s", js.Name, js.IODepth, js.IOEngine)
			case js.IODepthBatchSubmit < 1 || js.IODepthBatchSubmit > js.IODepth ||
				js.IODepthLow < 1 || js.IODepthLow > js.IODepth ||
				js.IODepthBatchCompleteMin < 0 || js.IODepthBatchCompleteMax < js.IODepthBatchCompleteMin:
				t.Fatalf("job %q iodepth %d batch %d complete %d..%d low %d", js.Name, js.IODepth,
					js.IODepthBatchSubmit, js.IODepthBatchCompleteMin, js.IODepthBatchCompleteMax, js.IODepthLow)
			case js.RWMixRead < 0 || js.RWMixRead > 100:
				t.Fatalf("job %q rwmixread %d", js.Name, js.RWMixRead)
			case !syncEngines[js.IOEngine] && !asyncEngines[js.IOEngine]:
				t.Fatalf("job %q engine %q", js.Name, js.IOEngine)
			case js.RW < RWRead || js.RW > RWRandRW:
				t.Fatalf("job %q rw %d", js.Name, js.RW)
			case js.Runtime < 0 || js.RampTime < 0:
				t.Fatalf("job %q runtime %v ramp %v", js.Name, js.Runtime, js.RampTime)
			case js.Name == "":
				t.Fatalf("job at line %d has no name", js.Line)
			case !js.RandSeedSet && js.RandSeed != DefaultRandSeed:
				t.Fatalf("job %q seed %#x not set but not default", js.Name, js.RandSeed)
			}
		}
	})
}
