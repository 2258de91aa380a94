// Command bart is the fibre peer harness for the Go library github.com/gaissmai/bart.
//
// It follows bench/harness/PROTOCOL.md: engines `bart-table` (bart.Table[uint8]) and
// `bart-fast` (bart.Fast[uint8]); metrics build, memory, lookup and latency (bart has no bulk
// lookup API, so no lookup_bulk). Records go to standard output, one JSON object per line;
// diagnostics go to standard error.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/gaissmai/bart"
)

// zero is an opaque 0: set at run time in main, so the compiler cannot fold it and the latency
// chain `addr[i] ^ (nh & zero)` really depends on the previous answer.
var zero uint64

// sink keeps every timed loop's result observable, so the compiler cannot drop the lookups.
var sink uint64

// ---------------------------------------------------------------------------------------------
// Command line

type workloadArg struct{ name, file string }

type workloadFlags []workloadArg

func (w *workloadFlags) String() string { return fmt.Sprint(*w) }

func (w *workloadFlags) Set(s string) error {
	name, file, ok := strings.Cut(s, "=")
	if !ok || name == "" || file == "" {
		return fmt.Errorf("want NAME=FILE, got %q", s)
	}
	for _, x := range *w {
		if x.name == name {
			return fmt.Errorf("workload %q given twice", name)
		}
	}
	*w = append(*w, workloadArg{name, file})
	return nil
}

// flagError is an error the flag package has already printed, with the usage.
type flagError struct{ error }

func (e flagError) Unwrap() error { return e.error }

type config struct {
	family    int
	routes    string
	out       string
	workloads workloadFlags
	checkN    int
	runs      int
	bulk      int
	cpu       int
	engines   string // --engines: comma-separated names to run; empty runs all
}

func parseArgs() (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("bart", flag.ContinueOnError)
	fs.IntVar(&c.family, "family", 0, "address family: 4 or 6")
	fs.StringVar(&c.routes, "routes", "", "routes `file`, one 'PREFIX/LEN NH' per line")
	fs.StringVar(&c.out, "out", "", "existing directory for check files")
	fs.Var(&c.workloads, "workload", "`NAME=FILE`, binary addresses in network order (repeatable)")
	fs.IntVar(&c.checkN, "check-n", 10000, "answers written per workload for checking")
	fs.IntVar(&c.runs, "runs", 5, "timed repetitions of each measurement")
	fs.IntVar(&c.bulk, "bulk", 64, "bulk batch size (unused: bart has no bulk lookup API)")
	fs.IntVar(&c.cpu, "cpu", -1, "pin the timed thread to this CPU (-1: no pinning)")
	fs.StringVar(&c.engines, "engines", "", "only these engines, comma-separated (default: all)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: bart --family 4|6 --routes FILE --out DIR [--workload NAME=FILE]... "+
			"[--check-n N] [--runs R] [--bulk B] [--cpu C]\n(bench/harness/PROTOCOL.md)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		return nil, flagError{err}
	}
	switch {
	case fs.NArg() != 0:
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	case c.family != 4 && c.family != 6:
		return nil, errors.New("--family must be 4 or 6")
	case c.routes == "":
		return nil, errors.New("--routes is required")
	case c.out == "":
		return nil, errors.New("--out is required")
	case c.checkN < 0:
		return nil, errors.New("--check-n must be >= 0")
	case c.runs < 1:
		return nil, errors.New("--runs must be >= 1")
	case c.bulk < 1:
		return nil, errors.New("--bulk must be >= 1")
	}
	if st, err := os.Stat(c.out); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("--out: %s is not a directory", c.out)
	}
	return c, nil
}

// ---------------------------------------------------------------------------------------------
// Input files

type routes struct {
	pfx []netip.Prefix
	nh  []uint8
}

func loadRoutes(path string, family int) (*routes, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &routes{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want `PREFIX/LEN NH`, got %q", path, line, text)
		}
		p, err := netip.ParsePrefix(fields[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		if (family == 4) != p.Addr().Is4() || p.Addr().Is4In6() {
			return nil, fmt.Errorf("%s:%d: %s is not an IPv%d prefix", path, line, p, family)
		}
		if p.Masked() != p {
			return nil, fmt.Errorf("%s:%d: %s is not masked", path, line, p)
		}
		nh, err := strconv.ParseUint(fields[1], 10, 8)
		if err != nil || nh >= 64 {
			return nil, fmt.Errorf("%s:%d: next hop %q is not in 0..63", path, line, fields[1])
		}
		r.pfx = append(r.pfx, p)
		r.nh = append(r.nh, uint8(nh))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// workload holds the addresses in the forms the loops use, all converted once on load: netip.Addr
// for the loops, and (only if the fallback latency loops are in use) integers they rebuild each
// address from after mixing in the previous answer.
type workload struct {
	name  string
	addrs []netip.Addr
	// Only for the fallback latency loops (see mix), nil otherwise.
	v4 []uint32    // family 4
	v6 [][2]uint64 // family 6: high and low halves
}

func loadWorkload(arg workloadArg, family int) (*workload, error) {
	data, err := os.ReadFile(arg.file)
	if err != nil {
		return nil, err
	}
	size := 4
	if family == 6 {
		size = 16
	}
	if len(data)%size != 0 {
		return nil, fmt.Errorf("%s: %d bytes is not a multiple of %d", arg.file, len(data), size)
	}
	n := len(data) / size
	w := &workload{name: arg.name, addrs: make([]netip.Addr, n)}
	if family == 4 {
		for i := range n {
			w.addrs[i] = netip.AddrFrom4([4]byte(data[i*4 : i*4+4]))
		}
		if !useMix {
			w.v4 = make([]uint32, n)
			for i := range n {
				w.v4[i] = binary.BigEndian.Uint32(data[i*4 : i*4+4])
			}
		}
	} else {
		for i := range n {
			w.addrs[i] = netip.AddrFrom16([16]byte(data[i*16 : i*16+16]))
		}
		if !useMix {
			w.v6 = make([][2]uint64, n)
			for i := range n {
				b := data[i*16 : i*16+16]
				w.v6[i] = [2]uint64{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
			}
		}
	}
	return w, nil
}

// ---------------------------------------------------------------------------------------------
// Timed loops. Written out once per engine on purpose: a generic function over both table types
// would share one GC shape and call Lookup through a dictionary (an indirect call), which the
// library's own users do not pay.

func b2u(b bool) uint32 {
	var x uint32
	if b {
		x = 1
	}
	return x
}

// The answer as mixed into the next address: the next hop, and 0x100 on a miss (so both the
// value and the found flag feed the chain).
func answer(v uint8, ok bool) uint32 { return uint32(v) | (b2u(!ok) << 8) }

func addr4(u uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], u)
	return netip.AddrFrom4(b)
}

func addr6(hi, lo uint64) netip.Addr {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	return netip.AddrFrom16(b)
}

func lookupTable(t *bart.Table[uint8], addrs []netip.Addr) uint64 {
	var acc uint32
	for _, a := range addrs {
		v, ok := t.Lookup(a)
		acc += answer(v, ok)
	}
	return uint64(acc)
}

func lookupFast(t *bart.Fast[uint8], addrs []netip.Addr) uint64 {
	var acc uint32
	for _, a := range addrs {
		v, ok := t.Lookup(a)
		acc += answer(v, ok)
	}
	return uint64(acc)
}

// mix returns a with m XORed into 64-bit word w of its 128-bit value: word 1 (the low bits,
// where an IPv4 address held as ::ffff:a.b.c.d lives) for IPv4, word 0 (the high bits, which
// every IPv6 lookup reads first) for IPv6, so the next lookup really waits for the answer. It
// writes netip.Addr's internal uint128 directly, which costs two instructions where rebuilding the address from bytes costs a
// store-forwarding stall on the dependent path; layoutOK checks the layout at start-up and the
// harness falls back to the byte-wise loops below if it ever changes.
func mix(a netip.Addr, m uint64, w int) netip.Addr {
	(*[2]uint64)(unsafe.Pointer(&a))[w] ^= m
	return a
}

// mixWord is the word mix writes for the family being measured (set in run).
var mixWord = 1

// layoutOK reports whether mix does what it says with this Go release's netip.Addr.
func layoutOK() bool {
	if unsafe.Sizeof(netip.Addr{}) != 24 {
		return false
	}
	return mix(netip.MustParseAddr("192.0.2.4"), 0x101, 1) == netip.MustParseAddr("192.0.3.5") &&
		mix(netip.MustParseAddr("2001:db8::1"), 3, 0) == netip.MustParseAddr("2001:db8:0:3::1") &&
		mix(netip.MustParseAddr("2001:db8::1"), 0, 0) == netip.MustParseAddr("2001:db8::1")
}

var useMix = layoutOK()

func latencyTable(t *bart.Table[uint8], a []netip.Addr) uint64 {
	z, w := zero, mixWord
	var x uint64
	for _, u := range a {
		v, ok := t.Lookup(mix(u, x&z, w))
		x = uint64(answer(v, ok))
	}
	return x
}

func latencyFast(t *bart.Fast[uint8], a []netip.Addr) uint64 {
	z, w := zero, mixWord
	var x uint64
	for _, u := range a {
		v, ok := t.Lookup(mix(u, x&z, w))
		x = uint64(answer(v, ok))
	}
	return x
}

// Fallback latency loops, rebuilding each address from integers through netip's constructors.

func latencyTable4(t *bart.Table[uint8], a []uint32) uint64 {
	z := uint32(zero)
	var x uint32
	for _, u := range a {
		v, ok := t.Lookup(addr4(u ^ (x & z)))
		x = answer(v, ok)
	}
	return uint64(x)
}

func latencyFast4(t *bart.Fast[uint8], a []uint32) uint64 {
	z := uint32(zero)
	var x uint32
	for _, u := range a {
		v, ok := t.Lookup(addr4(u ^ (x & z)))
		x = answer(v, ok)
	}
	return uint64(x)
}

func latencyTable6(t *bart.Table[uint8], a [][2]uint64) uint64 {
	z := zero
	var x uint64
	for _, u := range a {
		v, ok := t.Lookup(addr6(u[0]^(x&z), u[1]))
		x = uint64(answer(v, ok))
	}
	return x
}

func latencyFast6(t *bart.Fast[uint8], a [][2]uint64) uint64 {
	z := zero
	var x uint64
	for _, u := range a {
		v, ok := t.Lookup(addr6(u[0]^(x&z), u[1]))
		x = uint64(answer(v, ok))
	}
	return x
}

// ---------------------------------------------------------------------------------------------
// Engines

type engine struct {
	name string
	// build inserts every route into a new, empty structure and returns it (kept alive by the
	// caller) together with a lookup function for answers and the two timed loops.
	build func(r *routes) table
}

type table struct {
	keep    any
	answer  func(netip.Addr) int // next hop or -1 (for check files, not timed)
	lookup  func(w *workload) uint64
	latency func(w *workload) uint64
}

var engines = []engine{
	{"bart-table", func(r *routes) table {
		t := new(bart.Table[uint8])
		for i, p := range r.pfx {
			t.Insert(p, r.nh[i])
		}
		return table{
			keep: t,
			answer: func(a netip.Addr) int {
				if v, ok := t.Lookup(a); ok {
					return int(v)
				}
				return -1
			},
			lookup: func(w *workload) uint64 { return lookupTable(t, w.addrs) },
			latency: func(w *workload) uint64 {
				if useMix {
					return latencyTable(t, w.addrs)
				}
				if w.v4 != nil {
					return latencyTable4(t, w.v4)
				}
				return latencyTable6(t, w.v6)
			},
		}
	}},
	{"bart-fast", func(r *routes) table {
		t := new(bart.Fast[uint8])
		for i, p := range r.pfx {
			t.Insert(p, r.nh[i])
		}
		return table{
			keep: t,
			answer: func(a netip.Addr) int {
				if v, ok := t.Lookup(a); ok {
					return int(v)
				}
				return -1
			},
			lookup: func(w *workload) uint64 { return lookupFast(t, w.addrs) },
			latency: func(w *workload) uint64 {
				if useMix {
					return latencyFast(t, w.addrs)
				}
				if w.v4 != nil {
					return latencyFast4(t, w.v4)
				}
				return latencyFast6(t, w.v6)
			},
		}
	}},
}

// ---------------------------------------------------------------------------------------------
// Output

type record struct {
	Engine   string  `json:"engine"`
	Metric   string  `json:"metric"`
	Workload string  `json:"workload,omitempty"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	Runs     int     `json:"runs"`
	Spread   float64 `json:"spread"`
	Note     string  `json:"note,omitempty"`
}

var stdout = bufio.NewWriter(os.Stdout)

func emit(r record) {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	stdout.Write(b)
	stdout.WriteByte('\n')
	stdout.Flush()
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bart: "+format+"\n", args...)
}

// medianMAD returns the median of xs and the median absolute deviation from it.
func medianMAD(xs []float64) (float64, float64) {
	median := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		n := len(s)
		if n%2 == 1 {
			return s[n/2]
		}
		return (s[n/2-1] + s[n/2]) / 2
	}
	m := median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = max(x-m, m-x)
	}
	return m, median(dev)
}

// ---------------------------------------------------------------------------------------------
// Measurement

// heapAlloc collects garbage and returns the live heap in bytes.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// timeLoop runs loop R times over n addresses and returns the median and MAD in ns per lookup.
// An untimed pass first warms the caches. The collector is run before each run (and is off
// otherwise, see main), so no GC work lands inside a timed loop; the runs are checked not to
// allocate (a warning on stderr if they do).
func timeLoop(runs, n int, what string, loop func() uint64) (float64, float64) {
	sink += loop() // warm-up, untimed
	per := make([]float64, runs)
	var allocs uint64
	for i := range per {
		runtime.GC()
		m0 := mallocs()
		start := time.Now()
		sink += loop()
		per[i] = float64(time.Since(start).Nanoseconds()) / float64(n)
		allocs += mallocs() - m0
	}
	// (Mallocs counts the whole process: a finalizer the runtime.GC() above queued, e.g. for a
	// closed check file, may allocate once on another thread. An allocating loop shows up as
	// about one per lookup.)
	if allocs > uint64(runs) {
		logf("warning: %s: %d allocations in %d timed runs of %d lookups", what, allocs, runs, n)
	}
	return medianMAD(per)
}

func writeCheck(path string, t table, w *workload, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	for _, a := range w.addrs[:min(n, len(w.addrs))] {
		bw.WriteString(strconv.Itoa(t.answer(a)))
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// buildInfo names the bart version and the amd64 level the binary was built for.
func buildInfo() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "bart (version unknown)"
	}
	s := "bart (version unknown)"
	for _, d := range bi.Deps {
		if d.Path == "github.com/gaissmai/bart" {
			s = "bart " + d.Version
		}
	}
	for _, kv := range bi.Settings {
		if kv.Key == "GOAMD64" {
			s += ", GOAMD64=" + kv.Value
		}
	}
	return s
}

// pinCPU binds the calling OS thread to one CPU (sched_setaffinity on thread id 0 = caller).
func pinCPU(cpu int) error {
	var mask [1024 / 64]uint64
	if cpu < 0 || cpu >= 1024 {
		return fmt.Errorf("cpu %d out of range", cpu)
	}
	mask[cpu/64] |= 1 << (uint(cpu) % 64)
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0,
		unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask)))
	if errno != 0 {
		return errno
	}
	return nil
}

func run(c *config) error {
	if c.family == 6 {
		mixWord = 0
	}
	rs, err := loadRoutes(c.routes, c.family)
	if err != nil {
		return err
	}
	var ws []*workload
	for _, arg := range c.workloads {
		w, err := loadWorkload(arg, c.family)
		if err != nil {
			return err
		}
		ws = append(ws, w)
	}
	logf("IPv%d: %d routes, %d workload(s); %s, %s, GOMAXPROCS=%d",
		c.family, len(rs.pfx), len(ws), buildInfo(), runtime.Version(), runtime.GOMAXPROCS(0))
	if !useMix {
		logf("netip.Addr layout not as expected: latency loops rebuild addresses via netip (slower)")
	}

	for _, e := range engines {
		if c.engines != "" && !slices.Contains(strings.Split(c.engines, ","), e.name) {
			continue
		}
		// build and memory: one build, timed; heap measured (after a full collection) before
		// and after it, with the table kept alive until after the second measurement.
		before := heapAlloc()
		start := time.Now()
		t := e.build(rs)
		elapsed := time.Since(start)
		after := heapAlloc()
		runtime.KeepAlive(t.keep)
		emit(record{Engine: e.name, Metric: "build", Value: elapsed.Seconds(), Unit: "s", Runs: 1})
		// (Clamped at 0: for a handful of routes the delta is within the runtime's own noise and
		// can come out a few hundred bytes negative.)
		emit(record{Engine: e.name, Metric: "memory", Value: float64(max(0, int64(after-before))),
			Unit: "bytes", Runs: 1,
			Note: "Go HeapAlloc delta (runtime.ReadMemStats after runtime.GC) around the build"})

		for _, w := range ws {
			if err := writeCheck(filepath.Join(c.out, e.name+"."+w.name+".check"), t, w,
				c.checkN); err != nil {
				return err
			}
			if len(w.addrs) == 0 {
				logf("%s: workload %s is empty, no timings", e.name, w.name)
				continue
			}
			n := len(w.addrs)
			m, s := timeLoop(c.runs, n, e.name+" lookup", func() uint64 { return t.lookup(w) })
			emit(record{Engine: e.name, Metric: "lookup", Workload: w.name, Value: m,
				Unit: "ns", Runs: c.runs, Spread: s})
			m, s = timeLoop(c.runs, n, e.name+" latency", func() uint64 { return t.latency(w) })
			emit(record{Engine: e.name, Metric: "latency", Workload: w.name, Value: m,
				Unit: "ns", Runs: c.runs, Spread: s})
		}
		runtime.KeepAlive(t.keep)
		t = table{}
	}
	logf("sink %d", sink)
	return nil
}

func main() {
	// The timed loops run on the main goroutine, locked to its OS thread (and pinned to --cpu).
	runtime.LockOSThread()
	zero = uint64(len(os.Args)) >> 40 // 0, but not known to the compiler
	if zero != 0 {
		panic("zero")
	}

	c, err := parseArgs()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		if _, printed := err.(flagError); !printed {
			fmt.Fprintf(os.Stderr, "bart: %v\n", err)
		}
		os.Exit(2)
	}
	if c.cpu >= 0 {
		if err := pinCPU(c.cpu); err != nil {
			fmt.Fprintf(os.Stderr, "bart: --cpu %d: %v\n", c.cpu, err)
			os.Exit(2)
		}
	}
	// No collector cycles triggered by allocation: every timed section is preceded by an
	// explicit runtime.GC() instead, so GC work never lands inside a timing (see README).
	debug.SetGCPercent(-1)

	if err := run(c); err != nil {
		fmt.Fprintf(os.Stderr, "bart: %v\n", err)
		os.Exit(1)
	}
}
