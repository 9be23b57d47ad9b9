package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

// median returns the median of sorted values v (0 when v is empty).
func median(v []float64) float64 {
	n := len(v)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// liveHeap samples the live heap at the last garbage collection.
type liveHeap struct {
	s    []metrics.Sample
	peak int64
	// prof, if not nil, takes an in-use heap profile at the largest
	// live heap (--heapprofile).
	prof *peakHeapProfile
}

func newLiveHeap(prof *peakHeapProfile) *liveHeap {
	return &liveHeap{s: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, prof: prof}
}

func (h *liveHeap) sample() {
	metrics.Read(h.s)
	if h.s[0].Value.Kind() == metrics.KindUint64 {
		live := int64(h.s[0].Value.Uint64())
		h.peak = max(h.peak, live)
		if h.prof != nil {
			h.prof.offer(live)
		}
	}
}

// peakHeapProfile keeps the in-use heap profile (pprof "heap") taken at
// the largest live heap seen over the runs: a sample of the live heap
// that is at least 10 % above the one of the kept profile takes
// a new one, so that a profile of a heap growing from 10 MiB to 1 GiB
// is taken about 50 times. The profile, like the live heap sample, is
// the heap as of the last garbage collection (runtime/pprof), so it
// names what the live heap at the peak was made of, within the step.
type peakHeapProfile struct {
	kept  []byte // the profile
	spare []byte // the array of the one before, reused
	at    int64  // the live heap when kept was taken; 0: none yet
	err   error
}

// offer takes a profile if live, a sample of the live heap in bytes, is
// the first or at least 10 % above the kept profile's.
func (p *peakHeapProfile) offer(live int64) {
	if p.err != nil || (p.at > 0 && live*10 < p.at*11) {
		return
	}
	b := bytes.NewBuffer(p.spare[:0])
	if err := pprof.Lookup("heap").WriteTo(b, 0); err != nil {
		p.err = err
		return
	}
	p.spare, p.kept = p.kept, b.Bytes()
	p.at = live
}

// write writes the kept profile to path.
func (p *peakHeapProfile) write(path string) error {
	if p.err != nil {
		return fmt.Errorf("heap profile: %w", p.err)
	}
	return os.WriteFile(path, p.kept, 0o644)
}

// measure runs one measured run: it collects garbage and returns memory
// to the OS, resets the peak RSS, and times run, which returns the events
// it read, the CPU time it used and the state bytes at its end.
func measure(prof *peakHeapProfile, run func(h *liveHeap) (events int64, cpu time.Duration, state int64, err error)) (BenchRun, bool, error) {
	runtime.GC()
	debug.FreeOSMemory()
	reset := resetPeakRSS()
	h := newLiveHeap(prof)
	h.sample()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	events, cpu, state, err := run(h)
	wall := time.Since(start)
	h.sample()
	runtime.ReadMemStats(&m1)
	if err != nil {
		return BenchRun{}, reset, err
	}
	r := BenchRun{
		Events:        events,
		WallSeconds:   wall.Seconds(),
		CPUSeconds:    cpu.Seconds(),
		PeakRSSBytes:  peakRSS(),
		FileRSSBytes:  fileRSS(),
		LiveHeapBytes: h.peak,
		StateBytesEnd: state,
	}
	if events > 0 {
		r.AllocsPerEvent = float64(m1.Mallocs-m0.Mallocs) / float64(events)
		r.BytesPerEvent = float64(m1.TotalAlloc-m0.TotalAlloc) / float64(events)
	}
	r.EventsPerSec = ratio(float64(events), r.WallSeconds)
	r.EventsPerCore = ratio(float64(events), r.CPUSeconds)
	return r, reset, nil
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// fileRSS returns the resident bytes of this process mapped from files
// and shared memory (Linux: RssFile + RssShmem of /proc/self/status, in
// kB), or 0 where unknown. The executable's pages are most of it: on a
// kernel that keeps large folios in the page cache a fault maps a whole
// 2 MiB piece of the file, so this differs between builds of the same
// code by tens of MiB (FilePmdMapped in /proc/self/smaps_rollup).
func fileRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return parseFileRSS(string(b))
}

// parseFileRSS sums the RssFile and RssShmem lines of a
// /proc/PID/status text, in bytes.
func parseFileRSS(status string) int64 {
	var n int64
	for line := range strings.Lines(status) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "RssFile" && k != "RssShmem") {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			n += kb * 1024
		}
	}
	return n
}

// resetPeakRSS makes the kernel's peak RSS of this process start again
// from the current RSS (Linux: /proc/self/clear_refs, value 5). It reports
// whether it could.
func resetPeakRSS() bool {
	if runtime.GOOS != "linux" {
		return false
	}
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// writeAllocProfile writes the allocation profile (pprof "allocs").
func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// medianRun is the median of each figure over the runs (the mean of the
// middle two for an even count).
func medianRun(runs []BenchRun) BenchRun {
	med := func(get func(*BenchRun) float64) float64 {
		v := make([]float64, len(runs))
		for i := range runs {
			v[i] = get(&runs[i])
		}
		slices.Sort(v)
		return median(v)
	}
	return BenchRun{
		Events:          int64(med(func(r *BenchRun) float64 { return float64(r.Events) })),
		Rows:            int64(med(func(r *BenchRun) float64 { return float64(r.Rows) })),
		WallSeconds:     med(func(r *BenchRun) float64 { return r.WallSeconds }),
		CPUSeconds:      med(func(r *BenchRun) float64 { return r.CPUSeconds }),
		EventsPerSec:    med(func(r *BenchRun) float64 { return r.EventsPerSec }),
		EventsPerCore:   med(func(r *BenchRun) float64 { return r.EventsPerCore }),
		PeakRSSBytes:    int64(med(func(r *BenchRun) float64 { return float64(r.PeakRSSBytes) })),
		FileRSSBytes:    int64(med(func(r *BenchRun) float64 { return float64(r.FileRSSBytes) })),
		LiveHeapBytes:   int64(med(func(r *BenchRun) float64 { return float64(r.LiveHeapBytes) })),
		StateBytesEnd:   int64(med(func(r *BenchRun) float64 { return float64(r.StateBytesEnd) })),
		ExchangeBytes:   int64(med(func(r *BenchRun) float64 { return float64(r.ExchangeBytes) })),
		AllocsPerEvent:  med(func(r *BenchRun) float64 { return r.AllocsPerEvent }),
		BytesPerEvent:   med(func(r *BenchRun) float64 { return r.BytesPerEvent }),
		DBBackendCPU:    med(func(r *BenchRun) float64 { return r.DBBackendCPU }),
		DBBackgroundCPU: med(func(r *BenchRun) float64 { return r.DBBackgroundCPU }),
		Checkpoints:     int(med(func(r *BenchRun) float64 { return float64(r.Checkpoints) })),
		Phases:          medianPhases(runs),
	}
}

// machine describes this machine.
func machine() benchMachine {
	return benchMachine{CPUModel: cpuModel(), CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS: runtime.GOOS, Arch: runtime.GOARCH, Go: runtime.Version()}
}

// cpuModel is the first "model name" of /proc/cpuinfo (Linux), or "".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
