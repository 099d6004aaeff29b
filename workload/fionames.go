package workload

import (
	"sort"
	"strings"
)

// fioOptionNames are the option names (and aliases) fio 3.33 knows: its
// job options and those of the IO engines of Debian's fio 3.33 build, as
// "fio --cmdhelp" and "fio --enghelp=ENGINE" list them. blksim uses them
// only to word its errors: an option that is not in optionTable is an
// error either way.
var fioOptionNames = map[string]bool{}

func init() {
	for _, n := range []string{
		"allow_file_create", "allow_mounted_write", "allrandrepeat", "arguments",
		"atomic", "ba", "bindname", "block_error_percentiles", "blockalign",
		"blocksize", "blocksize_range", "blocksize_unaligned", "brick", "bs",
		"bs_unaligned", "bsrange", "bssplit", "buffer_compress_chunk",
		"buffer_compress_percentage", "buffer_pattern", "buffered", "busy_poll",
		"bwavgtime", "cgroup", "cgroup_nodelete", "cgroup_weight",
		"clat_percentiles", "clientname", "clocksource", "clustername",
		"cmd_type", "cmdprio", "cmdprio_bssplit", "cmdprio_class",
		"cmdprio_percentage", "conf", "continue_on_error", "cpuload", "cpumask",
		"cpumode", "cpus_allowed", "cpus_allowed_policy", "create_fsync",
		"create_on_open", "create_only", "create_serialize", "dedupe_global",
		"dedupe_mode", "dedupe_percentage", "dedupe_working_set_percentage",
		"description", "direct", "directory", "disable_bw",
		"disable_bw_measurement", "disable_clat", "disable_lat", "disable_slat",
		"disk_util", "do_verify", "donorname", "end_fsync", "error_dump",
		"exec_postrun", "exec_prerun", "exit_on_io_done", "exit_what", "exitall",
		"exitall_on_error", "experimental_verify", "fadvise_hint", "fallocate",
		"fdatasync", "file_append", "file_service_type", "filename",
		"filename_format", "fileoffset", "filesize", "fill_device", "fill_fs",
		"fixedbufs", "flow", "flow_id", "flow_sleep", "force_async", "fsync",
		"fsync_on_close", "gid", "grace_time", "group_reporting", "gtod_cpu",
		"gtod_reduce", "hipri", "hipri_percentage", "hostname", "hugepage-size",
		"ignore_error", "ignore_zone_limits", "inplace", "interface",
		"invalidate", "io_limit", "io_size", "io_submit_mode", "iodepth",
		"iodepth_batch", "iodepth_batch_complete", "iodepth_batch_complete_max",
		"iodepth_batch_complete_min", "iodepth_batch_submit", "iodepth_low",
		"ioengine", "iomem", "iopsavgtime", "ioscheduler", "job_max_open_zones",
		"kb_base", "lat_percentiles", "latency_percentile", "latency_run",
		"latency_target", "latency_window", "listen", "lockfile", "lockmem",
		"log_alternate_epoch", "log_alternate_epoch_clock_id", "log_avg_msec",
		"log_compression", "log_compression_cpus", "log_entries",
		"log_hist_coarseness", "log_hist_msec", "log_max_value", "log_offset",
		"log_prio", "log_store_compressed", "log_unix_epoch", "loops",
		"max_latency", "max_open_zones", "mem", "merge_blktrace_file",
		"merge_blktrace_iters", "merge_blktrace_scalars", "mss", "name",
		"new_group", "nice", "nodelay", "nonvectored", "norandommap", "nowait",
		"nr_files", "nrfiles", "numa_cpu_nodes", "numa_mem_policy", "number_ios",
		"numjobs", "offset", "offset_align", "offset_increment", "opendir",
		"openfiles", "overwrite", "per_job_logs", "percentage_random",
		"percentile_list", "pingpong", "pool", "port", "pre_read", "prio",
		"prioclass", "profile", "program", "proto", "protocol", "ramp_time",
		"random_distribution", "random_generator", "randrepeat", "randseed",
		"rate", "rate_cycle", "rate_ignore_thinktime", "rate_iops",
		"rate_iops_min", "rate_min", "rate_process", "ratecycle", "ratemin",
		"rbdname", "read_beyond_wp", "read_iolog", "read_iolog_chunked",
		"readfua", "readwrite", "refill_buffers", "registerfiles", "replay_align",
		"replay_no_stall", "replay_redirect", "replay_scale", "replay_skip",
		"replay_time_scale", "runtime", "rw", "rw_sequencer", "rwmixread",
		"rwmixwrite", "scramble_buffers", "serialize_overlap", "sg_write_mode",
		"significant_figures", "size", "skip_bad", "slat_percentiles",
		"sqthread_poll", "sqthread_poll_cpu", "ss", "ss_dur", "ss_ramp",
		"startdelay", "stat_type", "stats", "std_redirect", "steadystate",
		"steadystate_duration", "steadystate_ramp_time", "stonewall", "stream_id",
		"sync", "sync_file_range", "thinktime", "thinktime_blocks",
		"thinktime_blocks_type", "thinktime_iotime", "thinktime_spin", "thp",
		"thread", "threads", "time_based", "timeout", "touch_objects",
		"trim_backlog", "trim_backlog_batch", "trim_percentage",
		"trim_verify_zero", "ttl", "uid", "uncached", "unified_rw_reporting",
		"unique_filename", "unit_base", "unlink", "unlink_each_loop", "uri",
		"userspace_reap", "verb", "verify", "verify_async", "verify_backlog",
		"verify_backlog_batch", "verify_dump", "verify_fatal", "verify_interval",
		"verify_offset", "verify_only", "verify_pattern", "verify_state_load",
		"verify_state_save", "volume", "wait_for", "wait_for_previous",
		"window_size", "write_barrier", "write_bw_log", "write_hint",
		"write_hist_log", "write_iolog", "write_iops_log", "write_lat_log",
		"writefua", "zero_buffers", "zone_reset_frequency",
		"zone_reset_threshold", "zonecapacity", "zonemode", "zonerange",
		"zonesize", "zoneskip",
	} {
		fioOptionNames[n] = true
	}
}

// notModelledReasons explain why some fio options are not modelled, by
// option name or by a prefix ending in '*'.
var notModelledReasons = map[string]string{
	"sync":                  "O_SYNC/O_DSYNC writes need a flush model, which blksim does not have yet",
	"fsync_on_close":        "an fsync at each file close is not modelled (fsync=N, fdatasync=N and end_fsync are)",
	"write_barrier":         "flushes are not modelled",
	"pre_read":              "reading the file into the page cache before the job is not modelled",
	"fadvise_hint":          "fadvise hints (readahead changes) are not modelled",
	"flow":                  "fio's token-based flow control between jobs is not modelled",
	"flow_id":               "fio's token-based flow control between jobs is not modelled",
	"flow_sleep":            "fio's token-based flow control between jobs is not modelled",
	"latency_target":        "fio's latency-target search is not modelled",
	"latency_window":        "fio's latency-target search is not modelled",
	"latency_percentile":    "fio's latency-target search is not modelled",
	"latency_run":           "fio's latency-target search is not modelled",
	"steadystate":           "fio's steady-state detection is not modelled",
	"ss":                    "fio's steady-state detection is not modelled",
	"verify_pattern":        "blksim carries data as stamps, not contents",
	"verify_interval":       "blksim checks every sector through its stamps; a verify header interval has no meaning there",
	"verify_offset":         "blksim carries data as stamps, not verify headers",
	"verify_dump":           "there are no data blocks to dump: blksim carries data as stamps",
	"verify_async":          "verification runs in the job's own thread",
	"verify_state_save":     "verify state files are not modelled",
	"verify_state_load":     "verify state files are not modelled",
	"buffer_compress_*":     "fio refills every write buffer for it, a per-IO CPU cost blksim does not model, and no device model compresses",
	"dedupe_*":              "fio refills every write buffer for it, a per-IO CPU cost blksim does not model, and no device model deduplicates",
	"refill_buffers":        "refilling every write buffer is a per-IO CPU cost blksim does not model",
	"log_compression":       "fio's in-memory compression of its logs during the run (background CPU work) is not modelled; the log files are the same without it",
	"log_compression_cpus":  "fio's in-memory compression of its logs is not modelled, nor is CPU affinity",
	"cpus_allowed*":         "CPU affinity is not modelled",
	"cpumask":               "CPU affinity is not modelled",
	"numa_*":                "NUMA placement is not modelled",
	"prio":                  "IO priorities are not modelled",
	"prioclass":             "IO priorities are not modelled",
	"cmdprio*":              "IO priorities are not modelled",
	"nice":                  "process priorities are not modelled",
	"cgroup*":               "cgroups are not modelled",
	"ignore_error":          "continue_on_error goes on past fio's default non-fatal errors (EIO, EILSEQ) only; lists of other errnos to ignore are not modelled",
	"unit_base":             "blksim's report uses bytes",
	"mem":                   "IO buffer memory is not modelled",
	"lockmem":               "memory locked away from the page cache is not modelled",
	"iomem":                 "IO buffer memory is not modelled",
	"unlink":                "files are not removed or re-created between jobs",
	"trim_percentage":       "trim is not modelled",
	"allrandrepeat":         "blksim's streams are seeded by --seed and randseed",
	"stats":                 "blksim always keeps statistics",
	"exec_prerun":           "blksim runs no programs",
	"exec_postrun":          "blksim runs no programs",
	"lockfile":              "one thread per file",
	"random_sequence_*":     "random_distribution=sequence is not modelled",
	"atomic":                "atomic writes are not modelled",
	"hipri":                 "polled completions are not modelled",
	"sqthread_poll":         "io_uring's submission-queue polling thread is not modelled",
	"sqthread_poll_cpu":     "io_uring's submission-queue polling thread is not modelled",
	"registerfiles":         "io_uring's registered files and buffers do not change blksim's costs",
	"fixedbufs":             "io_uring's registered files and buffers do not change blksim's costs",
	"nonvectored":           "vectored and non-vectored io_uring commands cost the same in blksim",
	"uncached":              "uncached buffered IO (RWF_UNCACHED) is not modelled",
	"profile":               "fio's profiles are not modelled",
	"ioscheduler":           "set the scheduler with --set queue.scheduler=...",
	"experimental_verify":   "not modelled",
	"serialize_overlap":     "overlapping IOs are not serialised by blksim",
	"replay_*":              "iolog replay is not modelled",
	"read_iolog":            "iolog replay is not modelled",
	"write_iolog":           "iolog recording is not modelled",
	"bs_unaligned":          "it lets bsrange draw IO sizes of any byte count, and blksim keeps data per 512-byte sector: buffered IO in smaller pieces is not modelled (direct IO of such sizes fails with EINVAL)",
	"blocksize_unaligned":   "it lets bsrange draw IO sizes of any byte count, and blksim keeps data per 512-byte sector: buffered IO in smaller pieces is not modelled (direct IO of such sizes fails with EINVAL)",
	"offset_align":          "offsets are aligned to the block size",
	"create_on_open":        "files are laid out before the job",
	"create_only":           "files are laid out before the job",
	"create_fsync":          "files are laid out before the job",
	"allow_mounted_write":   "blksim's device is simulated",
	"allow_file_create":     "blksim always creates the job's file",
	"overwrite":             "blksim always lays the file out before the job",
	"thinktime_iotime":      "not modelled",
	"rate_ignore_thinktime": "not modelled",
}

// unknownReason says why name is not in blksim's option table, for the
// error message.
func unknownReason(name string) string {
	if name == "include" {
		return `write "include FILE" without "=" to include a job file`
	}
	why := notModelledReasons[name]
	if why == "" {
		// The longest matching prefix pattern wins.
		best := ""
		for k, v := range notModelledReasons {
			if p, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(name, p) && len(p) > len(best) {
				best, why = p, v
			}
		}
	}
	if fioOptionNames[name] {
		if why == "" {
			why = "an fio option blksim does not simulate"
		}
		return "fio's " + name + ": " + why
	}
	if why != "" {
		return why
	}
	msg := "not an fio 3.33 job option; an option of an engine blksim does not model, or a typo"
	if s := suggestOption(name); s != "" {
		msg += `; did you mean "` + s + `"?`
	}
	return msg
}

// suggestOption returns the option blksim models whose name is closest to
// name, if it is close (fio suggests one the same way).
func suggestOption(name string) string {
	var names []string
	for n := range optionIndex {
		names = append(names, n)
	}
	sort.Strings(names)
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, capped for
// long inputs.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
