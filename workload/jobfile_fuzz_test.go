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
		"[j]\npercentile_list=99.9:50:0:1e1\nbwavgtime=250\niopsavgtime=1k\n",
		"[j\n",
		"[]\n",
		"[j]\n=x\ninclude a b\n",
		"[j]\ninclude inc.fio\nsize=(2*4k+512)\noffset=10%\n",
		"include loop.fio\n[j]\n",
		"[global]\nkb_base=1000\nsize=1m\n[a]\nbs=1kib\n[b]\nstonewall\nwait_for=a\nnew_group\n",
		"[j]\nrw=randread:8\nrw_sequencer=identical\nbsrange=4k-16k,8k:2k\nbssplit=4k/50:8k/,16k/100\n",
		"[j]\nrandom_distribution=zoned:50/5:30/15:20/\nnorandommap\npercentage_random=50,20\nrandom_generator=lfsr\n",
		"[j]\nrandom_distribution=zipf:1.2:0.3\n[k]\nrandom_distribution=zoned_abs:60/1m:40/2m,100/\n",
		"[j]\nrate=1m,500k\nrate_iops=,100\nrate_process=poisson\nrate_min=1k\nrate_cycle=500\nio_submit_mode=offload\n",
		"[j]\nthinktime=2ms\nthinktime_spin=(1ms/2)\nthinktime_blocks=4\nthinktime_blocks_type=issue\nstartdelay=1-5\nloops=3\n",
		"[j]\nverify=crc32c\ndo_verify=0\nverify_only\nverify_fatal=1\nverify_backlog=16\nverify_backlog_batch=4\n",
		"[j]\nexitall\nexit_what=stonewall\ndescription=a b c\nfilesize=1m-4m\nio_size=8m\nnumber_ios=1k\nfill_device=1\n",
		"[j]\nnumjobs=$ncpus*2\nsize=$mb_memory/4m\nbs=$pagesize\niodepth=($ncpus)\nruntime=(1m+30s)\n",
		"[j]\nsize=(1.5k)\noffset=(2^10%3)\nio_size=(-4+8)k\nfilename_format=$jobname.$jobnum\ndirectory=/d\n",
		"[j]\ngtod_reduce=1\nclat_percentiles=1\ndisable_lat=0\nexitall_on_error\nclocksource=cpu\nbuffer_pattern='x'\nzero_buffers\nscramble_buffers=0\n",
		"[j]\nnrfiles=4\nopenfiles=2\nfile_service_type=random:8\n[k]\nnr_files=3\nfile_service_type=zipf:1.2:0.5\nfilename_format=f.$filenum\n",
		"[j]\nnrfiles=2\nfile_service_type=gauss:10\n[k]\nfile_service_type=sequential\nnrfiles=1k\nfill_device=1\n",
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
	// Includes come from memory: inc.fio is a plain include, loop.fio
	// includes itself, and any other name does not exist.
	files := map[string]string{
		"inc.fio":  "bs=8k\n[global]\nrw=randwrite\n[inc]\n",
		"loop.fio": "include loop.fio\n",
	}
	readFile := func(path string) ([]byte, error) {
		if d, ok := files[filepath.Base(path)]; ok {
			return []byte(d), nil
		}
		return nil, os.ErrNotExist
	}
	opt := ParseOptions{Env: env, Host: Host{CPUs: 4, MemoryMB: 2048}, ReadFile: readFile}
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, err := ParseWith("fuzz.fio", bytes.NewReader(data), opt)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error is %T, not *ParseError: %v", err, err)
			}
			if pe.File == "" || pe.Line < 1 {
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
			case js.Line < 1 || js.File == "":
				t.Fatalf("job %q at %s:%d", js.Name, js.File, js.Line)
			case js.BS[0] <= 0 || js.BS[1] <= 0:
				t.Fatalf("job %q bs %v", js.Name, js.BS)
			case js.Size < 0:
				t.Fatalf("job %q size %d", js.Name, js.Size)
			case js.NumJobs < 1 || js.NumJobs > maxJobs:
				t.Fatalf("job %q numjobs %d", js.Name, js.NumJobs)
			case js.IODepth < 1:
				// (A sync engine keeps the iodepth given, as fio
				// reports it; it issues one IO at a time.)
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
			checkNewFields(t, js)
		}
	})
}

// checkNewFields checks the invariants of the JobSpec fields of the
// options beyond the first version's.
func checkNewFields(t *testing.T, js JobSpec) {
	t.Helper()
	pct := func(what string, v int) {
		if v < 0 || v > 100 {
			t.Fatalf("job %q %s %d", js.Name, what, v)
		}
	}
	pct("size%", js.SizePercent)
	pct("offset%", js.OffsetPercent)
	pct("offset_increment%", js.OffsetIncrementPercent)
	if js.Size < 0 || js.Offset < 0 || js.OffsetIncrement < 0 || js.IOSize < 0 || js.NumberIOs < 0 {
		t.Fatalf("job %q negative size, offset, increment, io_size or number_ios", js.Name)
	}
	if fs := js.FileSize; fs[0] < 0 || fs[0] > fs[1] || fs[0] == 0 && fs[1] != 0 {
		t.Fatalf("job %q filesize %v", js.Name, fs)
	}
	for d := range 2 {
		pct("percent sequential", js.PercentSequential[d])
		if r := js.BSRange[d]; r != [2]int64{} && (r[0] <= 0 || r[0] > r[1]) {
			t.Fatalf("job %q bsrange %v", js.Name, js.BSRange)
		}
		for _, e := range js.BSSplit[d] {
			if e.BS <= 0 || e.Percent < 0 || e.Percent > 100 {
				t.Fatalf("job %q bssplit %v", js.Name, js.BSSplit)
			}
		}
		if js.BlockAlign[d] < 0 || js.Rate[d] < 0 || js.RateIOPS[d] < 0 || js.RateMin[d] < 0 || js.RateIOPSMin[d] < 0 {
			t.Fatalf("job %q negative blockalign or rate", js.Name)
		}
		dist := js.Distribution[d]
		switch dist.Kind {
		case DistRandom:
		case DistZipf, DistPareto, DistNormal:
			if dist.Param < 0 || dist.HasCenter && (dist.Center < 0 || dist.Center > 1) {
				t.Fatalf("job %q distribution %+v", js.Name, dist)
			}
		case DistZoned, DistZonedAbs:
			sum := 0
			for _, z := range dist.Zones {
				sum += z.AccessPercent
				if z.SizePercent < 0 || z.SizePercent > 100 || z.Size < 0 {
					t.Fatalf("job %q zone %+v", js.Name, z)
				}
			}
			if sum != 100 {
				t.Fatalf("job %q zones sum to %d", js.Name, sum)
			}
		default:
			t.Fatalf("job %q distribution kind %v", js.Name, dist.Kind)
		}
	}
	if js.SeqNr < 0 || js.Loops < 0 || js.ThinkTimeBlocks < 0 || js.VerifyBacklog < 0 || js.VerifyBacklogBatch < 0 {
		t.Fatalf("job %q negative count", js.Name)
	}
	if js.ThinkTime < 0 || js.ThinkTimeSpin < 0 || js.RateCycle < 0 || js.StartDelay[0] < 0 || js.StartDelay[0] > js.StartDelay[1] {
		t.Fatalf("job %q bad durations", js.Name)
	}
	switch js.ExitWhat {
	case "", "group", "stonewall", "all":
	default:
		t.Fatalf("job %q exit_what %q", js.Name, js.ExitWhat)
	}
	if js.Verify != "" && !verifyModes[js.Verify] {
		t.Fatalf("job %q verify %q", js.Name, js.Verify)
	}
	switch js.RandomGenerator {
	case "", "tausworthe64", "lfsr":
	default:
		t.Fatalf("job %q random_generator %q", js.Name, js.RandomGenerator)
	}
	if js.NrFiles < 0 || js.NrFiles > maxNrFiles || js.OpenFiles < 0 || js.FillDevice && nrFiles(&js) > 1 {
		t.Fatalf("job %q nrfiles %d openfiles %d fill_device %v", js.Name, js.NrFiles, js.OpenFiles, js.FillDevice)
	}
	switch fs := js.FileService; fs.Kind {
	case FileServiceRoundRobin, FileServiceSequential, FileServiceRandom:
		if fs.Switch < 0 || fs.Param != 0 || fs.HasCenter {
			t.Fatalf("job %q file service %+v", js.Name, fs)
		}
	case FileServiceZipf, FileServicePareto, FileServiceNormal:
		if fs.Switch != 0 || fs.Param < 0 || fs.HasCenter && (fs.Center < 0 || fs.Center > 1) ||
			fs.Kind == FileServiceZipf && fs.Param == 1 || fs.Kind == FileServicePareto && (fs.Param <= 0 || fs.Param >= 1) ||
			fs.Kind == FileServiceNormal && fs.Param >= 100 {
			t.Fatalf("job %q file service %+v", js.Name, fs)
		}
	default:
		t.Fatalf("job %q file service kind %v", js.Name, fs.Kind)
	}
}
