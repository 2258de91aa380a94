/* SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * dpdk: the DPDK peer harness of `fibre bench` (bench/harness/PROTOCOL.md).
 *
 *   --family 4: dpdk-lpm (rte_lpm) and dpdk-fib-dir24-8 (rte_fib, RTE_FIB_DIR24_8)
 *   --family 6: dpdk-lpm6 (rte_lpm6) and dpdk-fib6-trie (rte_fib6, RTE_FIB6_TRIE)
 *
 * EAL runs without hardware: no hugepages, no PCI, no shared config, on one lcore (the CPU given by
 * --cpu, else the first CPU this process may run on); the tables live in a heap of transparent
 * huge pages added to it (`table_heap`). Records go to stdout, one JSON object per
 * line; EAL and DPDK logs go to stderr.
 *
 * With --updates N it times changes instead of lookups: after the build, N random routes are
 * deleted and put back one call at a time while a reader thread does bulk lookups on another CPU
 * (the update benchmark of `fibre bench`, docs/bench.md).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_fib.h>
#include <rte_fib6.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_rib6.h>

/* Next hop rte_fib / rte_fib6 return for "no route": above every NH of the protocol (< 64) and
 * valid for every next-hop size (2-byte entries hold up to 0x7fff). */
#define FIB_MISS_NH 0x7fffu

static volatile uint64_t g_zero;  /* the opaque 0 of the latency chain */
static volatile uint64_t g_sink;  /* lookups feed this so none can be dropped */

/* Keeps the compiler from treating `p`'s contents as dead (stores of inlined bulk lookups). */
#define KEEP(p) __asm__ __volatile__("" : : "r"(p) : "memory")

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("dpdk: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

/* ---------------------------------------------------------------- command line, input files */

struct workload {
	char *name;
	const char *path;
	size_t count;
	uint32_t *v4; /* host byte order */
	uint8_t (*v6)[16]; /* network byte order, as in the file */
};

struct route4 {
	uint32_t ip; /* host byte order */
	uint8_t depth;
	uint32_t nh;
};

struct route6 {
	uint8_t ip[16];
	uint8_t depth;
	uint32_t nh;
};

static struct {
	int family;
	const char *routes_path;
	const char *out;
	struct workload *wl;
	size_t n_wl;
	size_t check_n;
	unsigned runs;
	unsigned bulk;
	int cpu;
	const char *engines; /* --engines: comma-separated names to run; NULL runs all */
	size_t updates;      /* --updates: routes deleted and put back (0: lookups are timed) */
	uint64_t seed;       /* --seed: which routes */
	int reader_cpu;      /* --reader-cpu: the update reader's CPU (-1: no reader) */
	double update_secs;  /* --update-secs: most seconds of changes per engine */
	struct route4 *r4;
	struct route6 *r6;
	size_t n_routes;
	int fib_avx512_possible; /* CPU has AVX-512F/DQ: EAL told to allow 512-bit SIMD */
	int has_half[2]; /* a /1 route covers the lower / upper half of the address space */
	int has_default; /* a /0 route */
} opt = { .check_n = 10000, .runs = 5, .bulk = 64, .cpu = -1, .seed = 1, .reader_cpu = -1,
	    .update_secs = 60 };

/* Whether --engines lists `name` (every engine runs without --engines). */
static int wanted(const char *name)
{
	if (!opt.engines)
		return 1;
	size_t n = strlen(name);
	for (const char *p = opt.engines; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return 1;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: dpdk --family 4|6 --routes FILE --out DIR [--workload NAME=FILE]...\n"
		"            [--check-n N] [--runs R] [--bulk B] [--cpu C] [--engines A,B]\n"
		"            [--updates N [--seed S] [--reader-cpu C] [--update-secs T]]\n");
	exit(2);
}

static unsigned long parse_ulong(const char *s, const char *what, unsigned long min, unsigned long max)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
		die("bad %s: %s", what, s);
	return v;
}

static void parse_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			usage();
		const char *v = argv[++i];
		if (!strcmp(a, "--family")) {
			opt.family = (int)parse_ulong(v, "--family", 4, 6);
			if (opt.family != 4 && opt.family != 6)
				die("--family must be 4 or 6");
		} else if (!strcmp(a, "--routes")) {
			opt.routes_path = v;
		} else if (!strcmp(a, "--out")) {
			opt.out = v;
		} else if (!strcmp(a, "--workload")) {
			const char *eq = strchr(v, '=');
			if (!eq || eq == v || !eq[1])
				die("--workload wants NAME=FILE, got %s", v);
			opt.wl = realloc(opt.wl, (opt.n_wl + 1) * sizeof(*opt.wl));
			if (!opt.wl)
				die("out of memory");
			struct workload *w = &opt.wl[opt.n_wl++];
			memset(w, 0, sizeof(*w));
			w->name = strndup(v, (size_t)(eq - v));
			w->path = eq + 1;
		} else if (!strcmp(a, "--check-n")) {
			opt.check_n = parse_ulong(v, "--check-n", 0, SIZE_MAX);
		} else if (!strcmp(a, "--runs")) {
			opt.runs = (unsigned)parse_ulong(v, "--runs", 1, 1000); /* per-run arrays live on the stack */
		} else if (!strcmp(a, "--bulk")) {
			opt.bulk = (unsigned)parse_ulong(v, "--bulk", 1, 1u << 20);
		} else if (!strcmp(a, "--cpu")) {
			opt.cpu = (int)parse_ulong(v, "--cpu", 0, CPU_SETSIZE - 1);
		} else if (!strcmp(a, "--engines")) {
			opt.engines = v;
		} else if (!strcmp(a, "--updates")) {
			opt.updates = parse_ulong(v, "--updates", 0, 1ul << 30);
		} else if (!strcmp(a, "--seed")) {
			opt.seed = parse_ulong(v, "--seed", 0, ULONG_MAX);
		} else if (!strcmp(a, "--reader-cpu")) {
			opt.reader_cpu = (int)parse_ulong(v, "--reader-cpu", 0, CPU_SETSIZE - 1);
		} else if (!strcmp(a, "--update-secs")) {
			opt.update_secs = (double)parse_ulong(v, "--update-secs", 1, 86400);
		} else {
			usage();
		}
	}
	if (!opt.family || !opt.routes_path || !opt.out)
		usage();
}

static void read_routes(void)
{
	FILE *f = fopen(opt.routes_path, "r");
	if (!f)
		die("%s: %s", opt.routes_path, strerror(errno));
	size_t cap = 1024, lineno = 0;
	char *line = NULL;
	size_t linecap = 0;
	ssize_t len;
	if (opt.family == 4)
		opt.r4 = malloc(cap * sizeof(*opt.r4));
	else
		opt.r6 = malloc(cap * sizeof(*opt.r6));
	if (!opt.r4 && !opt.r6)
		die("out of memory");
	while ((len = getline(&line, &linecap, f)) >= 0) {
		lineno++;
		char pfx[64];
		unsigned depth, nh;
		char extra;
		char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\n' || *p == '\r' || *p == '\0' || *p == '#')
			continue;
		if (sscanf(p, "%63[^/ \t]/%u %u %c", pfx, &depth, &nh, &extra) != 3)
			die("%s:%zu: expected PREFIX/LEN NH", opt.routes_path, lineno);
		if (nh >= 64) /* PROTOCOL.md; rte_fib's miss marker is far above */
			die("%s:%zu: next hop %u out of range 0..63", opt.routes_path, lineno, nh);
		if (opt.n_routes == cap) {
			cap *= 2;
			if (opt.family == 4)
				opt.r4 = realloc(opt.r4, cap * sizeof(*opt.r4));
			else
				opt.r6 = realloc(opt.r6, cap * sizeof(*opt.r6));
			if (!opt.r4 && !opt.r6)
				die("out of memory");
		}
		if (opt.family == 4) {
			struct in_addr a;
			if (inet_pton(AF_INET, pfx, &a) != 1 || depth > 32)
				die("%s:%zu: not an IPv4 prefix: %s/%u", opt.routes_path, lineno, pfx, depth);
			struct route4 *r = &opt.r4[opt.n_routes++];
			r->ip = ntohl(a.s_addr);
			r->depth = (uint8_t)depth;
			r->nh = nh;
			if (depth == 1)
				opt.has_half[r->ip >> 31] = 1;
			opt.has_default |= depth == 0;
		} else {
			if (depth > 128)
				die("%s:%zu: prefix length %u", opt.routes_path, lineno, depth);
			struct route6 *r = &opt.r6[opt.n_routes++];
			if (inet_pton(AF_INET6, pfx, r->ip) != 1)
				die("%s:%zu: not an IPv6 prefix: %s", opt.routes_path, lineno, pfx);
			r->depth = (uint8_t)depth;
			r->nh = nh;
			if (depth == 1)
				opt.has_half[r->ip[0] >> 7] = 1;
			opt.has_default |= depth == 0;
		}
	}
	if (ferror(f))
		die("%s: read error", opt.routes_path);
	free(line);
	fclose(f);
}

static void read_workloads(void)
{
	size_t w = opt.family == 4 ? 4 : 16;
	for (size_t i = 0; i < opt.n_wl; i++) {
		struct workload *wl = &opt.wl[i];
		FILE *f = fopen(wl->path, "rb");
		if (!f)
			die("%s: %s", wl->path, strerror(errno));
		if (fseek(f, 0, SEEK_END) != 0)
			die("%s: cannot seek", wl->path);
		long sz = ftell(f);
		rewind(f);
		if (sz < 0 || (size_t)sz % w)
			die("%s: size %ld is not a multiple of %zu", wl->path, sz, w);
		wl->count = (size_t)sz / w;
		size_t bytes = ((size_t)sz + 63) / 64 * 64;
		void *buf = aligned_alloc(64, bytes ? bytes : 64);
		if (!buf)
			die("out of memory");
		if (fread(buf, 1, (size_t)sz, f) != (size_t)sz)
			die("%s: short read", wl->path);
		fclose(f);
		if (opt.family == 4) {
			wl->v4 = buf;
			for (size_t j = 0; j < wl->count; j++)
				wl->v4[j] = ntohl(wl->v4[j]);
		} else {
			wl->v6 = buf;
		}
	}
}

/* ---------------------------------------------------------------- sizing */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

struct u128 {
	uint64_t hi, lo;
};

static int cmp_u128(const void *a, const void *b)
{
	const struct u128 *x = a, *y = b;
	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* tbl8 groups an IPv4 DIR-24-8 table needs: one per /24 holding a longer prefix. */
static size_t tbl8_needed_v4(void)
{
	uint32_t *k = malloc((opt.n_routes + 1) * sizeof(*k));
	size_t n = 0, distinct = 0;
	if (!k)
		die("out of memory");
	for (size_t i = 0; i < opt.n_routes; i++)
		if (opt.r4[i].depth > 24)
			k[n++] = opt.r4[i].ip >> 8;
	qsort(k, n, sizeof(*k), cmp_u32);
	for (size_t i = 0; i < n; i++)
		distinct += i == 0 || k[i] != k[i - 1];
	free(k);
	return distinct;
}

/* tbl8 groups an IPv6 24-8-8-... table (rte_lpm6, rte_fib6 trie) needs: one per distinct byte
 * boundary prefix of 3..15 bytes strictly shorter than some route. */
static size_t tbl8_needed_v6(void)
{
	struct u128 *k = malloc((opt.n_routes + 1) * sizeof(*k));
	size_t total = 0;
	if (!k)
		die("out of memory");
	for (unsigned bytes = 3; bytes < 16; bytes++) {
		size_t n = 0;
		for (size_t i = 0; i < opt.n_routes; i++) {
			const struct route6 *r = &opt.r6[i];
			if ((r->depth + 7u) / 8u <= bytes)
				continue;
			uint8_t m[16] = { 0 };
			memcpy(m, r->ip, bytes);
			uint64_t hi = 0, lo = 0;
			for (int b = 0; b < 8; b++) {
				hi = hi << 8 | m[b];
				lo = lo << 8 | m[8 + b];
			}
			k[n].hi = hi;
			k[n].lo = lo;
			n++;
		}
		qsort(k, n, sizeof(*k), cmp_u128);
		for (size_t i = 0; i < n; i++)
			total += i == 0 || cmp_u128(&k[i], &k[i - 1]) != 0;
	}
	free(k);
	return total;
}

/* Upper bound of the tbl8 groups rte_fib6's trie reserves: ceil(depth/8) - 3 per route longer
 * than /24 (used only to size EAL memory). */
static size_t fib6_reserve_bound(void)
{
	size_t total = 0;
	for (size_t i = 0; i < opt.n_routes; i++)
		if (opt.r6[i].depth > 24)
			total += (opt.r6[i].depth + 7u) / 8u - 3;
	return total;
}

/* The tbl8 groups rte_fib6's trie will have reserved after adding every route, in order. The
 * trie refuses a route (ENOSPC) when its reservation would reach num_tbl8, and it reserves more
 * than it uses: (ceil(depth/8) - ceil(max(covering depth, 24)/8)) for a route longer than /24
 * with nothing below its byte-aligned prefix yet, nothing when the covering route has the same
 * next hop (DPDK 22.11 lib/fib/trie.c, trie_modify). Replayed here on a scratch rte_rib6 so the
 * table is sized to what it will ask for rather than to a guess. */
static size_t fib6_reserved_tbl8(void)
{
	struct rte_rib6_conf rc = { .ext_sz = 0, .max_nodes = (int)(2 * opt.n_routes + 2) };
	struct rte_rib6 *rib = rte_rib6_create("fibre_sim6", (int)rte_socket_id(), &rc);
	if (!rib)
		return fib6_reserve_bound();
	size_t rsvd = 0;
	for (size_t i = 0; i < opt.n_routes; i++) {
		const struct route6 *r = &opt.r6[i];
		uint8_t ip[16];
		memcpy(ip, r->ip, 16);
		for (unsigned b = 0; b < 16; b++) {
			int keep = (int)r->depth - (int)(8 * b);
			ip[b] &= keep >= 8 ? 0xff : keep <= 0 ? 0 : (uint8_t)(0xff << (8 - keep));
		}
		unsigned diff = 0;
		if (r->depth > 24) {
			if (rte_rib6_get_nxt(rib, ip, r->depth & ~7u, NULL, RTE_RIB6_GET_NXT_COVER) == NULL) {
				unsigned parent = 24;
				struct rte_rib6_node *t = rte_rib6_lookup(rib, ip);
				if (t) {
					uint8_t d;
					rte_rib6_get_depth(t, &d);
					parent = d > 24 ? d : 24;
				}
				diff = ((r->depth + 7u) / 8u) - ((parent + 7u) / 8u);
			}
		}
		if (rte_rib6_lookup_exact(rib, ip, r->depth))
			continue;
		struct rte_rib6_node *node = rte_rib6_insert(rib, ip, r->depth);
		if (!node) {
			rte_rib6_free(rib);
			return fib6_reserve_bound();
		}
		rte_rib6_set_nh(node, r->nh);
		struct rte_rib6_node *par = rte_rib6_lookup_parent(node);
		uint64_t pnh;
		if (par && rte_rib6_get_nh(par, &pnh) == 0 && pnh == r->nh)
			continue;
		rsvd += diff;
	}
	rte_rib6_free(rib);
	return rsvd;
}

/* ---------------------------------------------------------------- EAL */

/* The CPU EAL pins the main lcore to: --cpu, else the first one this process may run on. */
static int pick_cpu(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	int have = sched_getaffinity(0, sizeof(set), &set) == 0;
	if (opt.cpu >= 0) {
		if (have && !CPU_ISSET(opt.cpu, &set))
			die("--cpu %d: not a CPU this process may run on", opt.cpu);
		return opt.cpu;
	}
	if (have)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				return c;
	return 0;
}

static void skip_all(const char *why)
{
	const char *e1 = opt.family == 4 ? "dpdk-lpm" : "dpdk-lpm6";
	const char *e2 = opt.family == 4 ? "dpdk-fib-dir24-8" : "dpdk-fib6-trie";
	if (wanted(e1))
		printf("{\"engine\":\"%s\",\"skip\":\"%s\"}\n", e1, why);
	if (wanted(e2))
		printf("{\"engine\":\"%s\",\"skip\":\"%s\"}\n", e2, why);
	fflush(stdout);
	exit(0);
}

struct span {
	uintptr_t lo, hi;
	size_t huge_kb, rss_kb;
};

/* Adds up, in /proc/self/smaps, the resident and the huge-page kilobytes of the mappings that
 * lie inside `s` (EAL maps each memory list as mappings of its own). */
static void smaps_in(struct span *s)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (f == NULL)
		return;
	char line[512];
	int inside = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		uintptr_t lo, hi;
		size_t kb;
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			inside = lo >= s->lo && hi <= s->hi;
		else if (inside && sscanf(line, "Rss: %zu kB", &kb) == 1)
			s->rss_kb += kb;
		else if (inside && sscanf(line, "AnonHugePages: %zu kB", &kb) == 1)
			s->huge_kb += kb;
	}
	fclose(f);
}

/* The tables' heap (see `table_heap`): its name, socket id and address range. */
#define TABLE_HEAP "fibre_tables"
static int table_socket = -1;
static struct span table_span;

/* The socket the tables are created on: the tables' heap, else EAL's memory. */
static int tables_socket(void)
{
	return table_socket >= 0 ? table_socket : (int)rte_socket_id();
}

/* A heap of `bytes` for the tables on transparent huge pages, as fibre's arenas get them
 * (anonymous memory, MADV_HUGEPAGE before the first touch): DPDK lays its tables out for huge
 * pages, and EAL's own memory without hugetlbfs (--no-huge) is a shared memfd, which the usual
 * THP setting (shmem_enabled never) keeps in 4 KiB pages. A W1 lookup of the 64 MiB tbl24 then
 * missed the TLB. FIBRE_NO_THP (set: no huge pages for fibre either) or any failure keeps the
 * tables in EAL's memory, saying why on stderr. */
static void table_heap(size_t bytes)
{
	if (getenv("FIBRE_NO_THP") != NULL)
		return;
	const size_t huge = 2u << 20;
	size_t len = (bytes + huge - 1) & ~(huge - 1);
	void *raw = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED) {
		fprintf(stderr, "dpdk: tables in EAL memory: mmap of %zu MiB: %s\n", len >> 20, strerror(errno));
		return;
	}
	uintptr_t base = ((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1);
	if (madvise((void *)base, len, MADV_HUGEPAGE) != 0)
		fprintf(stderr, "dpdk: madvise(MADV_HUGEPAGE): %s\n", strerror(errno));
	if (rte_malloc_heap_create(TABLE_HEAP) != 0 ||
	    rte_malloc_heap_memory_add(TABLE_HEAP, (void *)base, len, NULL, 0, huge) != 0) {
		fprintf(stderr, "dpdk: tables in EAL memory: external heap: %s\n", rte_strerror(rte_errno));
		return;
	}
	table_socket = rte_malloc_heap_get_socket(TABLE_HEAP);
	table_span = (struct span){ base, base + len, 0, 0 };
}

/* "; tables on huge pages: H of R MiB resident" for a build note (the share tells whether
 * MADV_HUGEPAGE took), or "; tables in EAL memory (4 KiB pages)". */
static void huge_note(char *buf, size_t n)
{
	struct span s = table_span;
	if (table_socket < 0) {
		snprintf(buf, n, "; tables in EAL memory (4 KiB pages)");
		return;
	}
	smaps_in(&s);
	snprintf(buf, n, "; tables on huge pages: %zu of %zu MiB resident", s.huge_kb >> 10, s.rss_kb >> 10);
}

/* Starts EAL with `mem_mb` MiB of ordinary (not huge) memory, advised onto transparent huge
 * pages (FIBRE_NO_THP unset, as for fibre's arenas). EAL output goes to stderr. */
static void eal_start(unsigned mem_mb)
{
	char lcore[32], mem[32];
	snprintf(lcore, sizeof(lcore), "%d", opt.cpu);
	snprintf(mem, sizeof(mem), "%u", mem_mb);
	char *args[32];
	int n = 0;
	args[n++] = "dpdk-harness";
	args[n++] = "--no-huge";
	args[n++] = "--no-pci";
	args[n++] = "--no-shconf";
	args[n++] = "--no-telemetry";
	args[n++] = "-l";
	args[n++] = lcore;
	args[n++] = "-m";
	args[n++] = mem;
	args[n++] = "--log-level=error";
	/* AVX-512 lookups (rte_fib / rte_fib6) are only selectable when EAL allows 512-bit SIMD;
	 * ask for it only where the CPU has it. */
	__builtin_cpu_init();
	opt.fib_avx512_possible = __builtin_cpu_supports("avx512f");
	if (opt.fib_avx512_possible)
		args[n++] = "--force-max-simd-bitwidth=512";
	args[n] = NULL;

	/* Logs to stderr; and anything EAL prints on stdout during init too. */
	rte_openlog_stream(stderr);
	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	if (saved >= 0)
		dup2(STDERR_FILENO, STDOUT_FILENO);
	int ret = rte_eal_init(n, args);
	int err = rte_errno;
	fflush(stdout);
	if (saved >= 0) {
		dup2(saved, STDOUT_FILENO);
		close(saved);
	}
	if (ret < 0) {
		char why[256];
		snprintf(why, sizeof(why), "rte_eal_init failed: %s", rte_strerror(err));
		for (char *p = why; *p; p++)
			if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
				*p = ' ';
		skip_all(why);
	}
}

static size_t heap_allocated(void)
{
	size_t total = 0;
	for (unsigned i = 0; i < rte_socket_count(); i++) {
		struct rte_malloc_socket_stats s;
		if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(i), &s) == 0)
			total += s.heap_allocsz_bytes;
	}
	struct rte_malloc_socket_stats s;
	if (table_socket >= 0 && rte_malloc_get_socket_stats(table_socket, &s) == 0)
		total += s.heap_allocsz_bytes;
	return total;
}

/* ---------------------------------------------------------------- output, statistics */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void record(const char *engine, const char *metric, const char *workload, double value,
		   const char *unit, unsigned runs, double spread, const char *note)
{
	printf("{\"engine\":");
	json_str(engine);
	printf(",\"metric\":");
	json_str(metric);
	if (workload) {
		printf(",\"workload\":");
		json_str(workload);
	}
	printf(",\"value\":%.10g,\"unit\":", value);
	json_str(unit);
	printf(",\"runs\":%u,\"spread\":%.6g", runs, spread);
	if (note) {
		printf(",\"note\":");
		json_str(note);
	}
	printf("}\n");
	fflush(stdout);
}

static void skip(const char *engine, const char *why)
{
	printf("{\"engine\":");
	json_str(engine);
	printf(",\"skip\":");
	json_str(why);
	printf("}\n");
	fflush(stdout);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median and MAD of `runs` timings (ns per lookup), written as one record. */
static void report_runs(const char *engine, const char *metric, const char *workload, double *ns,
			unsigned runs, const char *note)
{
	double m = median(ns, runs);
	double dev[runs];
	for (unsigned i = 0; i < runs; i++)
		dev[i] = fabs(ns[i] - m);
	double mad = median(dev, runs);
	record(engine, metric, workload, m, "ns", runs, mad, note);
}

static FILE *open_check(const char *engine, const char *workload)
{
	size_t len = strlen(opt.out) + strlen(engine) + strlen(workload) + 16;
	char *path = malloc(len);
	if (!path)
		die("out of memory");
	snprintf(path, len, "%s/%s.%s.check", opt.out, engine, workload);
	FILE *f = fopen(path, "w");
	if (!f)
		die("%s: %s", path, strerror(errno));
	free(path);
	return f;
}

static void close_check(FILE *f)
{
	if (fflush(f) != 0 || ferror(f) || fclose(f) != 0)
		die("writing check file: %s", strerror(errno));
}

/* Answers of the bulk API must equal the single lookups'; a mismatch is a harness bug. */
static void bulk_mismatch(const char *engine, const char *workload, size_t i, int64_t single, int64_t bulk)
{
	fprintf(stderr, "dpdk: %s %s: address %zu: single lookup %" PRId64 ", bulk lookup %" PRId64 "\n",
		engine, workload, i, single, bulk);
	exit(1);
}

/* ---------------------------------------------------------------- engines: the common driver */

enum pass { PASS_LOOKUP, PASS_BULK, PASS_LATENCY };

static const char *const pass_metric[] = { "lookup", "lookup_bulk", "latency" };

/* One engine: what differs between rte_lpm, rte_fib, rte_lpm6 and rte_fib6. `run_engine` does the
 * rest (build with its retries, records, check files, timing) the same way for all four.
 *
 * The timed loops are not shared: `pass` runs one whole pass of one measurement with the engine's
 * own lookup calls, and is called through its pointer once per pass. Loops shared through a
 * lookup-one or lookup-bulk pointer would add an indirect call to every lookup (or batch), a ns
 * or more on lookups that take a few, and rte_lpm's inline lookups could no longer be inlined.
 * The build's adds do go through `add`, one indirect call per route: about a ns against adds of
 * hundreds of ns (rte_fib) to over a hundred us (rte_lpm on the full table). */
struct engine {
	const char *name;        /* in records and check file names */
	const char *api;         /* "rte_lpm": names API_create (skip) and API_add (build note) */
	const char *max_name;    /* the config fields of the build note: max rules or routes, */
	const char *tbl8_name;   /* tbl8 groups, */
	const char *conf_extra;  /* anything else worth saying (appended as is) */
	int default_as_halves;   /* depth 0 refused: `add` adds /0 as the two /1 halves */
	const char *memory_note;
	size_t out_size;         /* bytes per answer of the bulk API */
	const char *lookup_note; /* notes of the lookup records (the bulk one gets ", batches of B") */
	const char *bulk_note;
	const char *latency_note;

	/* A table for `max` routes and `tbl8` tbl8 groups; NULL (rte_errno set) if that fails. */
	void *(*create)(uint32_t max, uint32_t tbl8);
	/* Adds route i of opt.r4 / opt.r6: 0 or a negative errno. */
	int (*add)(void *t, size_t i);
	/* Deletes route i (depth > 0): 0 or a negative errno. */
	int (*del)(void *t, size_t i);
	void (*free)(void *t);
	/* Picks the lookup function (rte_fib, rte_fib6) and describes it in `buf`; NULL: none to pick. */
	const char *(*select)(void *t, char *buf, size_t len);
	/* Untimed answers (next hop or -1) for the check files: addresses i..i+k-1 of `wl`
	 * (k <= --bulk) by the bulk API into `out`, and address i by the single-address call (NULL:
	 * there is none, the bulk API with one address stands for it, as in the timed loops). */
	void (*answer_bulk)(void *t, const struct workload *wl, size_t i, unsigned k, void *out, int64_t *res);
	int64_t (*answer)(void *t, const struct workload *wl, size_t i);
	/* One pass over `wl` of measurement `p` (timed loop; answers go to g_sink). */
	void (*pass)(void *t, const struct workload *wl, enum pass p, void *out);
};

/* Creates and fills the table (rebuilt with twice the tbl8 groups, up to four times, when routes
 * are refused for lack of them) and writes the build, memory and failed_routes records. NULL
 * (and a skip record) if the table cannot be created. */
static void *build(const struct engine *e, uint32_t tbl8)
{
	const char *E = e->name;
	/* rte_lpm and rte_lpm6 take a /0 as its two /1 halves: one rule more. */
	const uint32_t max =
		(uint32_t)(opt.n_routes ? opt.n_routes : 1) + (e->default_as_halves && opt.has_default);
	unsigned retries = 0;
	size_t before, failed, enospc, mem;
	int first_err;
	double t0, t1;
	void *t;
again:
	before = heap_allocated();
	t = e->create(max, tbl8);
	if (!t) {
		char why[160];
		snprintf(why, sizeof(why), "%s_create failed: %s", e->api, rte_strerror(rte_errno));
		skip(E, why);
		return NULL;
	}
	failed = 0;
	enospc = 0;
	first_err = 0;
	t0 = now_s();
	for (size_t i = 0; i < opt.n_routes; i++) {
		int ret = e->add(t, i);
		if (ret < 0) {
			failed++;
			enospc += ret == -ENOSPC;
			if (!first_err)
				first_err = ret;
		}
	}
	t1 = now_s();
	mem = heap_allocated() - before;
	if (enospc && retries < 4 && tbl8 < (1u << 23)) {
		/* sizing was short: start again with twice the tbl8 groups */
		fprintf(stderr, "dpdk: %s: %zu routes refused for lack of tbl8 groups with %u, retrying with %u\n",
			E, enospc, (unsigned)tbl8, (unsigned)tbl8 * 2);
		e->free(t);
		tbl8 *= 2;
		retries++;
		goto again;
	}
	if (failed)
		fprintf(stderr, "dpdk: %s: %zu routes refused, first error %s\n", E, failed, strerror(-first_err));
	char note[256];
	snprintf(note, sizeof(note), "%s_add of %zu routes, create excluded; %s %u, %s %u%s", e->api,
		 opt.n_routes, e->max_name, max, e->tbl8_name, tbl8, e->conf_extra);
	if (retries)
		snprintf(note + strlen(note), sizeof(note) - strlen(note), " (after %u doublings)", retries);
	if (e->default_as_halves && opt.has_default)
		snprintf(note + strlen(note), sizeof(note) - strlen(note), "; the /0 route added as the two /1 halves (depth 0 is refused)");
	huge_note(note + strlen(note), sizeof(note) - strlen(note));
	record(E, "build", NULL, t1 - t0, "s", 1, 0, note);
	record(E, "memory", NULL, (double)mem, "bytes", 1, 0, e->memory_note);
	record(E, "failed_routes", NULL, (double)failed, "routes", 1, 0, NULL);
	return t;
}

/* DIR/ENGINE.WORKLOAD.check: single-lookup answers for the first --check-n addresses; the bulk
 * API's answers for them must be the same. `out` and `res` hold --bulk answers. */
static void write_check(const struct engine *e, void *t, const struct workload *wl, void *out, int64_t *res)
{
	const unsigned B = opt.bulk;
	size_t nc = opt.check_n < wl->count ? opt.check_n : wl->count;
	FILE *cf = open_check(e->name, wl->name);
	for (size_t i = 0; i < nc; i += B) {
		unsigned k = (unsigned)(nc - i < B ? nc - i : B);
		e->answer_bulk(t, wl, i, k, out, res);
		for (unsigned j = 0; j < k; j++) {
			int64_t s;
			if (e->answer)
				s = e->answer(t, wl, i + j);
			else /* res holds the batch's answers already: `out` may be reused */
				e->answer_bulk(t, wl, i + j, 1, out, &s);
			if (s != res[j])
				bulk_mismatch(e->name, wl->name, i + j, s, res[j]);
			fprintf(cf, "%" PRId64 "\n", s);
		}
	}
	close_check(cf);
}

/* One untimed pass, then --runs timed ones (CLOCK_MONOTONIC around the whole pass); one record.
 * `wl` is not empty. */
static void measure(const struct engine *e, void *t, const struct workload *wl, enum pass p, void *out,
		    const char *note)
{
	double ns[opt.runs];
	e->pass(t, wl, p, out); /* warm-up, not timed */
	for (unsigned run = 0; run < opt.runs; run++) {
		double t0 = now_s();
		e->pass(t, wl, p, out);
		double t1 = now_s();
		ns[run] = (t1 - t0) * 1e9 / (double)wl->count;
	}
	report_runs(e->name, pass_metric[p], wl->name, ns, opt.runs, note);
}

/* ---------------------------------------------------------------- the update benchmark */

/* The reader beside the changes: bulk lookups over the first workload, pass after pass, on its
 * own CPU, until told to stop. DPDK's tables are written in place and their readers take no
 * lock; the answers read mid-change are not checked, only counted. */
struct update_reader {
	const struct engine *e;
	void *t;
	const struct workload *wl;
	void *out;
	int stop;   /* __atomic: set by the writer when its changes are done */
	int pinned; /* the reader runs on --reader-cpu */
	uint64_t lookups;
	double secs;
};

static void *update_reader_main(void *arg)
{
	struct update_reader *r = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(opt.reader_cpu, &set);
	r->pinned = pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
	if (!r->pinned)
		fprintf(stderr, "dpdk: reader not pinned to cpu %d\n", opt.reader_cpu);
	double t0 = now_s();
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		r->e->pass(r->t, r->wl, PASS_BULK, r->out);
		r->lookups += r->wl->count;
	}
	r->secs = now_s() - t0;
	return NULL;
}

/* splitmix64: the routes changed, from --seed. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double quantile(double *v, size_t n, double q)
{
	qsort(v, n, sizeof(*v), cmp_double);
	size_t k = (size_t)ceil(q * (double)n);
	return v[(k < 1 ? 1 : k > n ? n : k) - 1];
}

/* Routes of the update benchmark checked while deleted (see write_deleted_check). */
#define DELETED_CHECKS 64

/* DIR/ENGINE.deleted.check, after the timed changes: the first DELETED_CHECKS routes changed
 * (`pick`), one at a time and untimed, are deleted again, the first address of the prefix is
 * looked up, and the route is put back; a line "ROUTE ANSWER" each (route index in the file,
 * next hop or -1). `fibre bench` checks every answer against the reference without that route.
 * The check file of the first workload cannot see a delete that leaves its route in place:
 * every route is back by then. A /1 is passed over where the engine holds a /0 as its halves:
 * the /1 took that half's place (see lpm_add), so nothing answers under it while the /1 is
 * gone, where the kernel and the reference answer with the /0. Returns the calls refused;
 * `calls` grows by the calls made. */
static size_t write_deleted_check(const struct engine *e, void *t, const size_t *pick, size_t n, void *out,
				  size_t *calls)
{
	size_t failed = 0, k = 0, checked[DELETED_CHECKS];
	for (size_t j = 0; j < n && k < DELETED_CHECKS; j++) {
		uint8_t depth = opt.family == 4 ? opt.r4[pick[j]].depth : opt.r6[pick[j]].depth;
		if (!(depth == 1 && e->default_as_halves && opt.has_default))
			checked[k++] = pick[j];
	}
	struct workload firsts = { .name = "deleted", .count = k };
	if (opt.family == 4)
		firsts.v4 = malloc((k ? k : 1) * sizeof(*firsts.v4));
	else
		firsts.v6 = malloc((k ? k : 1) * sizeof(*firsts.v6));
	if (opt.family == 4 ? !firsts.v4 : !firsts.v6)
		die("out of memory");
	for (size_t j = 0; j < k; j++) {
		if (opt.family == 4)
			firsts.v4[j] = opt.r4[checked[j]].ip;
		else
			memcpy(firsts.v6[j], opt.r6[checked[j]].ip, 16);
	}
	FILE *cf = open_check(e->name, "deleted");
	for (size_t j = 0; j < k; j++) {
		int d = e->del(t, checked[j]);
		int64_t s;
		if (e->answer)
			s = e->answer(t, &firsts, j);
		else
			e->answer_bulk(t, &firsts, j, 1, out, &s);
		int a = e->add(t, checked[j]);
		failed += (d != 0) + (a != 0);
		fprintf(cf, "%zu %" PRId64 "\n", checked[j], s);
	}
	*calls += 2 * k;
	close_check(cf);
	free(firsts.v4);
	free(firsts.v6);
	return failed;
}

/* --updates N: N distinct random routes (never the /0, which rte_lpm and rte_lpm6 hold as two
 * /1s; at most as many as there are) deleted, then put back at once, each call timed, as
 * `fibre bench` times its changes; at most --update-secs seconds. Records update_median, update_p999, update_delete_median,
 * update_insert_median (ns) and update_reader_lookup (ns per lookup of the reader), then writes
 * the deleted check (write_deleted_check) and the check file of the first workload: the table
 * must answer as before the changes. */
static void run_updates(const struct engine *e, void *t, void *out, int64_t *res)
{
	const char *E = e->name;
	size_t n = opt.updates, done = 0, failed = 0, eligible = 0, first_at = 0;
	int first_err = 0;
	const char *first_what = "";
	size_t *pick = malloc((opt.n_routes ? opt.n_routes : 1) * sizeof(*pick));
	if (!pick)
		die("out of memory");
	for (size_t i = 0; i < opt.n_routes; i++)
		if ((opt.family == 4 ? opt.r4[i].depth : opt.r6[i].depth) > 0)
			pick[eligible++] = i;
	if (n > eligible)
		n = eligible;
	if (!n) {
		free(pick);
		skip(E, "no route to change");
		return;
	}
	/* The first n of a Fisher-Yates shuffle: distinct routes, as fibre's `choose_multiple`. */
	uint64_t state = opt.seed;
	for (size_t j = 0; j < n; j++) {
		size_t k = j + (size_t)(next_random(&state) % (eligible - j));
		size_t x = pick[j];
		pick[j] = pick[k];
		pick[k] = x;
	}
	double *del = malloc(n * sizeof(*del)), *ins = malloc(n * sizeof(*ins)),
	       *all = malloc(2 * n * sizeof(*all));
	if (!del || !ins || !all)
		die("out of memory");
	struct update_reader r = { .e = e, .t = t, .wl = opt.n_wl ? &opt.wl[0] : NULL, .out = out };
	pthread_t reader;
	int reading = opt.reader_cpu >= 0 && r.wl && r.wl->count > 0;
	if (reading && pthread_create(&reader, NULL, update_reader_main, &r) != 0)
		die("cannot start the reader thread");
	double deadline = now_s() + opt.update_secs;
	while (done < n) {
		size_t i = pick[done];
		double t0 = now_s();
		int d = e->del(t, i);
		double t1 = now_s();
		int a = e->add(t, i);
		double t2 = now_s();
		failed += (d != 0) + (a != 0);
		if ((d != 0 || a != 0) && !first_err) {
			first_err = d != 0 ? d : a;
			first_what = d != 0 ? "a delete" : "an add";
			first_at = done;
		}
		del[done] = (t1 - t0) * 1e9;
		ins[done] = (t2 - t1) * 1e9;
		all[2 * done] = del[done];
		all[2 * done + 1] = ins[done];
		done++;
		if (t2 > deadline)
			break;
	}
	if (reading) {
		__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
		pthread_join(reader, NULL);
	}
	size_t calls = 2 * done;
	size_t check_failed = write_deleted_check(e, t, pick, done, out, &calls);
	free(pick);
	if (failed)
		fprintf(stderr, "dpdk: %s: %zu of %zu update calls failed, the first %s of change %zu: %s\n",
			E, failed, 2 * done, first_what, first_at, strerror(-first_err));
	if (check_failed)
		fprintf(stderr, "dpdk: %s: %zu update calls of the deleted check failed\n", E, check_failed);
	failed += check_failed;
	char cpu[16] = "-", note[320];
	if (reading)
		snprintf(cpu, sizeof(cpu), r.pinned ? "%d" : "%d (not pinned)", opt.reader_cpu);
	snprintf(note, sizeof(note),
		 "%zu random routes deleted then put back (%s_delete, %s_add), one call each%s; "
		 "a reader doing bulk lookups on cpu %s; %zu calls failed",
		 done, e->api, e->api, done < n ? ", stopped at the --update-secs limit" : "", cpu, failed);
	record(E, "update_median", NULL, median(all, (unsigned)(2 * done)), "ns", (unsigned)(2 * done), 0, note);
	record(E, "update_p999", NULL, quantile(all, 2 * done, 0.999), "ns", (unsigned)(2 * done), 0, note);
	record(E, "update_delete_median", NULL, median(del, (unsigned)done), "ns", (unsigned)done, 0, note);
	record(E, "update_insert_median", NULL, median(ins, (unsigned)done), "ns", (unsigned)done, 0, note);
	record(E, "update_failed_calls", NULL, (double)failed, "calls", (unsigned)calls, 0, note);
	if (reading && r.lookups)
		record(E, "update_reader_lookup", NULL, r.secs * 1e9 / (double)r.lookups, "ns", 1, 0, note);
	if (opt.n_wl)
		write_check(e, t, &opt.wl[0], out, res);
	free(all);
	free(ins);
	free(del);
}

/* Everything for one engine, if --engines lists it. */
static void run_engine(const struct engine *e, size_t tbl8)
{
	const char *E = e->name;
	if (!wanted(E))
		return;
	void *t = build(e, (uint32_t)tbl8);
	if (!t)
		return;

	char fnbuf[128], fn_tail[160] = "";
	const char *fn = e->select ? e->select(t, fnbuf, sizeof(fnbuf)) : NULL;
	if (fn) {
		fprintf(stderr, "dpdk: %s lookup function: %s\n", E, fn);
		snprintf(fn_tail, sizeof(fn_tail), "; lookup fn: %s", fn);
	}

	void *out = aligned_alloc(64, ((opt.bulk * e->out_size) + 63) / 64 * 64);
	int64_t *res = malloc(opt.bulk * sizeof(*res));
	if (!out || !res)
		die("out of memory");
	if (opt.updates) {
		run_updates(e, t, out, res);
		free(res);
		free(out);
		e->free(t);
		return;
	}
	char note[384];
	for (size_t w = 0; w < opt.n_wl; w++) {
		const struct workload *wl = &opt.wl[w];
		write_check(e, t, wl, out, res);
		if (wl->count == 0) {
			fprintf(stderr, "dpdk: %s: workload %s is empty, nothing to time\n", E, wl->name);
			continue;
		}
		snprintf(note, sizeof(note), "%s%s", e->lookup_note, fn_tail);
		measure(e, t, wl, PASS_LOOKUP, out, note);
		snprintf(note, sizeof(note), "%s, batches of %u%s", e->bulk_note, opt.bulk, fn_tail);
		measure(e, t, wl, PASS_BULK, out, note);
		snprintf(note, sizeof(note), "%s%s", e->latency_note, fn_tail);
		measure(e, t, wl, PASS_LATENCY, out, note);
	}
	free(res);
	free(out);
	e->free(t);
}

/* ---------------------------------------------------------------- IPv4: rte_lpm */

static void *lpm_create(uint32_t max, uint32_t tbl8)
{
	struct rte_lpm_config cfg = { .max_rules = max, .number_tbl8s = tbl8, .flags = 0 };
	return rte_lpm_create("fibre_lpm", tables_socket(), &cfg);
}

static int lpm_add(void *t, size_t i)
{
	const struct route4 *r = &opt.r4[i];
	if (r->depth == 0) {
		/* rte_lpm wants depth >= 1: the default route is the two /1 halves, except a
		 * half that has its own /1 route (which wins over /0 there anyway). */
		int ret = 0;
		for (unsigned h = 0; h < 2 && ret == 0; h++)
			if (!opt.has_half[h])
				ret = rte_lpm_add(t, (uint32_t)h << 31, 1, r->nh);
		return ret;
	}
	return rte_lpm_add(t, r->ip, r->depth, r->nh);
}

static int lpm_del(void *t, size_t i)
{
	const struct route4 *r = &opt.r4[i];
	return rte_lpm_delete(t, r->ip, r->depth);
}

static void lpm_free(void *t)
{
	rte_lpm_free(t);
}

static int64_t lpm_answer(void *t, const struct workload *wl, size_t i)
{
	uint32_t nh;
	return rte_lpm_lookup(t, wl->v4[i], &nh) == 0 ? (int64_t)nh : -1;
}

static void lpm_answer_bulk(void *t, const struct workload *wl, size_t i, unsigned k, void *out, int64_t *res)
{
	uint32_t *o = out;
	rte_lpm_lookup_bulk(t, wl->v4 + i, o, k);
	for (unsigned j = 0; j < k; j++)
		res[j] = (o[j] & RTE_LPM_LOOKUP_SUCCESS) ? (int64_t)(o[j] & 0x00ffffff) : -1;
}

static void lpm_pass(void *t, const struct workload *wl, enum pass p, void *outp)
{
	const struct rte_lpm *lpm = t;
	const uint32_t *a = wl->v4;
	const size_t n = wl->count;
	const unsigned B = opt.bulk;
	uint32_t *out = outp;
	switch (p) {
	case PASS_LOOKUP: {
		uint32_t acc = 0;
		for (size_t i = 0; i < n; i++) {
			uint32_t nh;
			int ret = rte_lpm_lookup(lpm, a[i], &nh);
			acc += nh + (uint32_t)ret;
		}
		g_sink += acc;
		break;
	}
	case PASS_BULK: {
		uint32_t acc = 0;
		for (size_t i = 0; i < n; i += B) {
			unsigned k = (unsigned)(n - i < B ? n - i : B);
			rte_lpm_lookup_bulk(lpm, a + i, out, k);
			KEEP(out);
			acc += out[0];
		}
		g_sink += acc;
		break;
	}
	case PASS_LATENCY: {
		uint32_t zero = (uint32_t)g_zero;
		uint32_t nh = 0;
		for (size_t i = 0; i < n; i++) {
			uint32_t r;
			rte_lpm_lookup(lpm, a[i] ^ (nh & zero), &r);
			nh = r;
		}
		g_sink += nh;
		break;
	}
	}
}

static const struct engine ENGINE_LPM = {
	.name = "dpdk-lpm", .api = "rte_lpm",
	.max_name = "max_rules", .tbl8_name = "number_tbl8s", .conf_extra = "", .default_as_halves = 1,
	.memory_note = "rte_malloc heap delta (heap_allocsz_bytes, all sockets) around create+add",
	.out_size = sizeof(uint32_t),
	.lookup_note = "rte_lpm_lookup (inline), one address per call",
	.bulk_note = "rte_lpm_lookup_bulk (inline)",
	.latency_note = "dependent chain of rte_lpm_lookup: addr[i] ^ (previous next_hop & volatile 0)",
	.create = lpm_create, .add = lpm_add, .del = lpm_del, .free = lpm_free,
	.answer_bulk = lpm_answer_bulk, .answer = lpm_answer, .pass = lpm_pass,
};

/* ---------------------------------------------------------------- rte_fib and rte_fib6: shared */

#define FIB_MEMORY_NOTE \
	"rte_malloc heap delta (heap_allocsz_bytes, all sockets) around create+add, includes the RIB"

/* rte_fib / rte_fib6 bulk answers, FIB_MISS_NH for no route, as check-file answers. */
static void fib_answers(const uint64_t *out, unsigned k, int64_t *res)
{
	for (unsigned j = 0; j < k; j++)
		res[j] = out[j] == FIB_MISS_NH ? -1 : (int64_t)out[j];
}

/* ---------------------------------------------------------------- IPv4: rte_fib DIR24_8 */

static const char *fib_select(void *fib, char *buf, size_t len)
{
	/* Optional override for experiments: FIBRE_DPDK_FIB_LOOKUP=macro|inline|uni|avx512 */
	const char *want = getenv("FIBRE_DPDK_FIB_LOOKUP");
	if (want && *want) {
		enum rte_fib_lookup_type t;
		if (!strcmp(want, "macro"))
			t = RTE_FIB_LOOKUP_DIR24_8_SCALAR_MACRO;
		else if (!strcmp(want, "inline"))
			t = RTE_FIB_LOOKUP_DIR24_8_SCALAR_INLINE;
		else if (!strcmp(want, "uni"))
			t = RTE_FIB_LOOKUP_DIR24_8_SCALAR_UNI;
		else if (!strcmp(want, "avx512"))
			t = RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512;
		else
			die("FIBRE_DPDK_FIB_LOOKUP: unknown %s", want);
		if (rte_fib_select_lookup(fib, t) != 0)
			die("rte_fib_select_lookup(%s) refused", want);
		snprintf(buf, len, "%s (forced by FIBRE_DPDK_FIB_LOOKUP)", want);
		return buf;
	}
	if (rte_fib_select_lookup(fib, RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512) == 0) {
		snprintf(buf, len, "AVX-512 vector (RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512)");
	} else {
		/* DEFAULT without AVX-512 is the scalar loop specialised for the next-hop size. */
		if (rte_fib_select_lookup(fib, RTE_FIB_LOOKUP_DEFAULT) != 0)
			die("rte_fib_select_lookup(DEFAULT) refused");
		snprintf(buf, len, "scalar (RTE_FIB_LOOKUP_DEFAULT; AVX-512 vector not available: %s)",
			 opt.fib_avx512_possible ? "refused by DPDK" : "CPU lacks AVX-512");
	}
	return buf;
}

static void *fib_create(uint32_t max, uint32_t tbl8)
{
	struct rte_fib_conf cfg = { .type = RTE_FIB_DIR24_8, .default_nh = FIB_MISS_NH, .max_routes = (int)max,
				    .rib_ext_sz = 0, .dir24_8 = { .nh_sz = RTE_FIB_DIR24_8_4B, .num_tbl8 = tbl8 } };
	return rte_fib_create("fibre_fib", tables_socket(), &cfg);
}

static int fib_add(void *t, size_t i)
{
	const struct route4 *r = &opt.r4[i];
	return rte_fib_add(t, r->ip, r->depth, r->nh);
}

static int fib_del(void *t, size_t i)
{
	const struct route4 *r = &opt.r4[i];
	return rte_fib_delete(t, r->ip, r->depth);
}

static void fib_free(void *t)
{
	rte_fib_free(t);
}

static void fib_answer_bulk(void *t, const struct workload *wl, size_t i, unsigned k, void *out, int64_t *res)
{
	rte_fib_lookup_bulk(t, wl->v4 + i, out, (int)k);
	fib_answers(out, k, res);
}

static void fib_pass(void *t, const struct workload *wl, enum pass p, void *outp)
{
	struct rte_fib *fib = t;
	uint32_t *a = wl->v4;
	const size_t n = wl->count;
	const unsigned B = opt.bulk;
	uint64_t *out = outp;
	switch (p) {
	case PASS_LOOKUP: {
		uint64_t acc = 0;
		for (size_t i = 0; i < n; i++) {
			uint64_t nh;
			rte_fib_lookup_bulk(fib, a + i, &nh, 1);
			acc += nh;
		}
		g_sink += acc;
		break;
	}
	case PASS_BULK: {
		uint64_t acc = 0;
		for (size_t i = 0; i < n; i += B) {
			unsigned k = (unsigned)(n - i < B ? n - i : B);
			rte_fib_lookup_bulk(fib, a + i, out, (int)k);
			KEEP(out);
			acc += out[0];
		}
		g_sink += acc;
		break;
	}
	case PASS_LATENCY: {
		uint32_t zero = (uint32_t)g_zero;
		uint64_t nh = 0;
		for (size_t i = 0; i < n; i++) {
			uint32_t ip = a[i] ^ ((uint32_t)nh & zero);
			rte_fib_lookup_bulk(fib, &ip, &nh, 1);
		}
		g_sink += nh;
		break;
	}
	}
}

static const struct engine ENGINE_FIB = {
	.name = "dpdk-fib-dir24-8", .api = "rte_fib",
	.max_name = "max_routes", .tbl8_name = "num_tbl8", .conf_extra = ", 4-byte next hops",
	.memory_note = FIB_MEMORY_NOTE,
	.out_size = sizeof(uint64_t),
	.lookup_note = "rte_fib_lookup_bulk with n=1 per address (rte_fib has no single-address API)",
	.bulk_note = "rte_fib_lookup_bulk",
	.latency_note = "dependent chain of rte_fib_lookup_bulk(n=1): addr[i] ^ (previous next_hop & volatile 0)",
	.create = fib_create, .add = fib_add, .del = fib_del, .free = fib_free, .select = fib_select,
	.answer_bulk = fib_answer_bulk, .pass = fib_pass,
};

/* ---------------------------------------------------------------- IPv6: rte_lpm6 */

static void *lpm6_create(uint32_t max, uint32_t tbl8)
{
	struct rte_lpm6_config cfg = { .max_rules = max, .number_tbl8s = tbl8, .flags = 0 };
	return rte_lpm6_create("fibre_lpm6", tables_socket(), &cfg);
}

static int lpm6_add(void *t, size_t i)
{
	const struct route6 *r = &opt.r6[i];
	if (r->depth == 0) {
		/* rte_lpm6 wants depth >= 1: as for rte_lpm, ::/0 becomes ::/1 and 8000::/1. */
		int ret = 0;
		for (unsigned h = 0; h < 2 && ret == 0; h++)
			if (!opt.has_half[h]) {
				uint8_t half[16] = { (uint8_t)(h << 7) };
				ret = rte_lpm6_add(t, half, 1, r->nh);
			}
		return ret;
	}
	return rte_lpm6_add(t, r->ip, r->depth, r->nh);
}

static int lpm6_del(void *t, size_t i)
{
	const struct route6 *r = &opt.r6[i];
	return rte_lpm6_delete(t, r->ip, r->depth);
}

static void lpm6_free(void *t)
{
	rte_lpm6_free(t);
}

static int64_t lpm6_answer(void *t, const struct workload *wl, size_t i)
{
	uint32_t nh;
	return rte_lpm6_lookup(t, wl->v6[i], &nh) == 0 ? (int64_t)nh : -1;
}

static void lpm6_answer_bulk(void *t, const struct workload *wl, size_t i, unsigned k, void *out, int64_t *res)
{
	int32_t *o = out;
	rte_lpm6_lookup_bulk_func(t, wl->v6 + i, o, k);
	for (unsigned j = 0; j < k; j++)
		res[j] = o[j] < 0 ? -1 : (int64_t)o[j];
}

static void lpm6_pass(void *t, const struct workload *wl, enum pass p, void *outp)
{
	const struct rte_lpm6 *lpm = t;
	uint8_t (*a)[16] = wl->v6;
	const size_t n = wl->count;
	const unsigned B = opt.bulk;
	int32_t *out = outp;
	switch (p) {
	case PASS_LOOKUP: {
		uint32_t acc = 0;
		for (size_t i = 0; i < n; i++) {
			uint32_t nh = 0;
			int ret = rte_lpm6_lookup(lpm, a[i], &nh);
			acc += nh + (uint32_t)ret;
		}
		g_sink += acc;
		break;
	}
	case PASS_BULK: {
		uint32_t acc = 0;
		for (size_t i = 0; i < n; i += B) {
			unsigned k = (unsigned)(n - i < B ? n - i : B);
			rte_lpm6_lookup_bulk_func(lpm, a + i, out, k);
			KEEP(out);
			acc += (uint32_t)out[0];
		}
		g_sink += acc;
		break;
	}
	case PASS_LATENCY: {
		uint64_t zero = g_zero;
		uint32_t nh = 0;
		uint8_t ip[16] __attribute__((aligned(16)));
		for (size_t i = 0; i < n; i++) {
			uint64_t hi, lo;
			memcpy(&hi, a[i], 8);
			memcpy(&lo, a[i] + 8, 8);
			hi ^= (uint64_t)nh & zero; /* the high bits: every lookup reads them first */
			memcpy(ip, &hi, 8);
			memcpy(ip + 8, &lo, 8);
			rte_lpm6_lookup(lpm, ip, &nh);
		}
		g_sink += nh;
		break;
	}
	}
}

static const struct engine ENGINE_LPM6 = {
	.name = "dpdk-lpm6", .api = "rte_lpm6",
	.max_name = "max_rules", .tbl8_name = "number_tbl8s", .conf_extra = "", .default_as_halves = 1,
	.memory_note = "rte_malloc heap delta (heap_allocsz_bytes, all sockets) around create+add, includes the rule hash",
	.out_size = sizeof(int32_t),
	.lookup_note = "rte_lpm6_lookup, one address per call",
	.bulk_note = "rte_lpm6_lookup_bulk_func",
	.latency_note = "dependent chain of rte_lpm6_lookup: high 64 bits of addr[i] ^ (previous next_hop & volatile 0)",
	.create = lpm6_create, .add = lpm6_add, .del = lpm6_del, .free = lpm6_free,
	.answer_bulk = lpm6_answer_bulk, .answer = lpm6_answer, .pass = lpm6_pass,
};

/* ---------------------------------------------------------------- IPv6: rte_fib6 trie */

static const char *fib6_select(void *fib, char *buf, size_t len)
{
	/* Optional override for experiments: FIBRE_DPDK_FIB6_LOOKUP=scalar|avx512 */
	const char *want = getenv("FIBRE_DPDK_FIB6_LOOKUP");
	if (want && *want) {
		enum rte_fib6_lookup_type t;
		if (!strcmp(want, "scalar"))
			t = RTE_FIB6_LOOKUP_TRIE_SCALAR;
		else if (!strcmp(want, "avx512"))
			t = RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512;
		else
			die("FIBRE_DPDK_FIB6_LOOKUP: unknown %s", want);
		if (rte_fib6_select_lookup(fib, t) != 0)
			die("rte_fib6_select_lookup(%s) refused", want);
		snprintf(buf, len, "%s (forced by FIBRE_DPDK_FIB6_LOOKUP)", want);
		return buf;
	}
	if (rte_fib6_select_lookup(fib, RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512) == 0) {
		snprintf(buf, len, "AVX-512 vector (RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512)");
	} else {
		if (rte_fib6_select_lookup(fib, RTE_FIB6_LOOKUP_TRIE_SCALAR) != 0)
			die("rte_fib6_select_lookup(SCALAR) refused");
		snprintf(buf, len, "scalar (RTE_FIB6_LOOKUP_TRIE_SCALAR; AVX-512 vector not available: %s)",
			 opt.fib_avx512_possible ? "refused by DPDK" : "CPU lacks AVX-512");
	}
	return buf;
}

static void *fib6_create(uint32_t max, uint32_t tbl8)
{
	struct rte_fib6_conf cfg = { .type = RTE_FIB6_TRIE, .default_nh = FIB_MISS_NH, .max_routes = (int)max,
				     .rib_ext_sz = 0, .trie = { .nh_sz = RTE_FIB6_TRIE_4B, .num_tbl8 = tbl8 } };
	return rte_fib6_create("fibre_fib6", tables_socket(), &cfg);
}

static int fib6_add(void *t, size_t i)
{
	const struct route6 *r = &opt.r6[i];
	return rte_fib6_add(t, r->ip, r->depth, r->nh);
}

static int fib6_del(void *t, size_t i)
{
	const struct route6 *r = &opt.r6[i];
	return rte_fib6_delete(t, r->ip, r->depth);
}

static void fib6_free(void *t)
{
	rte_fib6_free(t);
}

static void fib6_answer_bulk(void *t, const struct workload *wl, size_t i, unsigned k, void *out, int64_t *res)
{
	rte_fib6_lookup_bulk(t, wl->v6 + i, out, (int)k);
	fib_answers(out, k, res);
}

static void fib6_pass(void *t, const struct workload *wl, enum pass p, void *outp)
{
	struct rte_fib6 *fib = t;
	uint8_t (*a)[16] = wl->v6;
	const size_t n = wl->count;
	const unsigned B = opt.bulk;
	uint64_t *out = outp;
	switch (p) {
	case PASS_LOOKUP: {
		uint64_t acc = 0;
		for (size_t i = 0; i < n; i++) {
			uint64_t nh;
			rte_fib6_lookup_bulk(fib, a + i, &nh, 1);
			acc += nh;
		}
		g_sink += acc;
		break;
	}
	case PASS_BULK: {
		uint64_t acc = 0;
		for (size_t i = 0; i < n; i += B) {
			unsigned k = (unsigned)(n - i < B ? n - i : B);
			rte_fib6_lookup_bulk(fib, a + i, out, (int)k);
			KEEP(out);
			acc += out[0];
		}
		g_sink += acc;
		break;
	}
	case PASS_LATENCY: {
		uint64_t zero = g_zero;
		uint64_t nh = 0;
		uint8_t ip[1][16] __attribute__((aligned(16)));
		for (size_t i = 0; i < n; i++) {
			uint64_t hi, lo;
			memcpy(&hi, a[i], 8);
			memcpy(&lo, a[i] + 8, 8);
			hi ^= nh & zero; /* the high bits: every lookup reads them first */
			memcpy(ip[0], &hi, 8);
			memcpy(ip[0] + 8, &lo, 8);
			rte_fib6_lookup_bulk(fib, ip, &nh, 1);
		}
		g_sink += nh;
		break;
	}
	}
}

static const struct engine ENGINE_FIB6 = {
	.name = "dpdk-fib6-trie", .api = "rte_fib6",
	.max_name = "max_routes", .tbl8_name = "num_tbl8", .conf_extra = ", 4-byte next hops",
	.memory_note = FIB_MEMORY_NOTE,
	.out_size = sizeof(uint64_t),
	.lookup_note = "rte_fib6_lookup_bulk with n=1 per address (rte_fib6 has no single-address API)",
	.bulk_note = "rte_fib6_lookup_bulk",
	.latency_note = "dependent chain of rte_fib6_lookup_bulk(n=1): high 64 bits of addr[i] ^ (previous next_hop & volatile 0)",
	.create = fib6_create, .add = fib6_add, .del = fib6_del, .free = fib6_free, .select = fib6_select,
	.answer_bulk = fib6_answer_bulk, .pass = fib6_pass,
};

/* ---------------------------------------------------------------- main */

/* Spare tbl8 groups beyond the computed need (build with -DTBL8_EXACT to test the sizing). */
#ifdef TBL8_EXACT
#define TBL8_SLACK(n) ((size_t)0 * (n))
#else
#define TBL8_SLACK(n) ((n) / 16 + 64)
#endif

int main(int argc, char **argv)
{
	parse_args(argc, argv);
	read_routes();
	read_workloads();

	/* tbl8 groups: exactly `need` suffice for rte_lpm, rte_fib DIR24_8 and rte_lpm6 filling an
	 * empty table; keep some slack. rte_fib6 is sized after EAL starts (fib6_reserved_tbl8). */
	size_t need = opt.family == 4 ? tbl8_needed_v4() : tbl8_needed_v6();
	size_t tbl8 = need + TBL8_SLACK(need);
	if (tbl8 > (1u << 23))
		tbl8 = 1u << 23;
	size_t bound = opt.family == 6 ? fib6_reserve_bound() + 64 : tbl8;
	if (bound < tbl8)
		bound = tbl8;

	/* EAL memory: tbl24 (64 MiB with 4-byte entries), tbl8 groups (1 KiB each), rules or RIB
	 * nodes (at most 2 per route in the RIBs, ~128 bytes each with overhead), then twice that
	 * for heap slack; plus a fixed reserve. Pages are only touched when used. */
	size_t est = (64u << 20) + bound * 1024 + opt.n_routes * 2 * 128;
	unsigned mem_mb = (unsigned)((2 * est >> 20) + 256);
	const char *m = getenv("FIBRE_DPDK_MEM_MB");
	if (m && *m)
		mem_mb = (unsigned)parse_ulong(m, "FIBRE_DPDK_MEM_MB", 64, 1u << 20);

	opt.cpu = pick_cpu();
	eal_start(mem_mb);
	table_heap((size_t)mem_mb << 20);

	if (opt.family == 4) {
		fprintf(stderr, "dpdk: %zu routes; tbl8 groups: %zu needed, %zu configured; EAL -m %u\n",
			opt.n_routes, need, tbl8, mem_mb);
		run_engine(&ENGINE_LPM, tbl8);
		run_engine(&ENGINE_FIB, tbl8);
	} else {
		/* The replay of rte_fib6's reservation rule costs a scratch RIB: only when it runs. */
		size_t rsvd = wanted("dpdk-fib6-trie") ? fib6_reserved_tbl8() : 0;
		size_t tbl8_fib6 = rsvd + 1 + TBL8_SLACK(rsvd);
		/* Changes need more than a build: deleting and adding back routes one by one, rte_fib6
		 * ran out of tbl8 groups (ENOSPC) after 11,240 changes of the full view with the
		 * build's sizing (the memory figure of an update run is not reported); twice that
		 * took 100,000 changes without a failure. */
		if (opt.updates)
			tbl8_fib6 *= 2;
		if (tbl8_fib6 > (1u << 23))
			tbl8_fib6 = 1u << 23;
		fprintf(stderr,
			"dpdk: %zu routes; tbl8 groups: lpm6 %zu needed, %zu configured; fib6 %zu reserved, %zu configured; EAL -m %u\n",
			opt.n_routes, need, tbl8, rsvd, tbl8_fib6, mem_mb);
		run_engine(&ENGINE_LPM6, tbl8);
		run_engine(&ENGINE_FIB6, tbl8_fib6);
	}
	rte_eal_cleanup();
	return 0;
}
