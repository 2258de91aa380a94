// SPDX-License-Identifier: GPL-2.0
/*
 * kernel-xdp: the `linux-kernel` peer harness of `fibre bench` (bench/harness/PROTOCOL.md).
 *
 * Run inside the prepared network namespace (`ip netns exec NS kernel-xdp ...`):
 *   build   routes go into the main table with raw rtnetlink RTM_NEWROUTE batches (no acks except
 *           on the last message), timed from the first send to the last ack;
 *   memory  /proc/meminfo deltas around the insertion (SUnreclaim + Percpu + VmallocUsed);
 *   lookup  an XDP program calling bpf_fib_lookup() under BPF_PROG_TEST_RUN, minus a baseline
 *           program doing the same work without the call;
 *   check   the answers of bpf_fib_lookup() for the first addresses of each workload.
 * The routes it installed are deleted again before it exits.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fib_lookup.skel.h"

#define ENGINE "linux-kernel"
#define DEV "bench0"
#define MAX_WORKLOADS 16
/* Runs per timed test_run: the workload's size, at least REPEAT_MIN (small workloads are cycled
 * through so the syscall's fixed cost does not show), at most REPEAT_CAP. */
#define REPEAT_MIN 100000u
#define REPEAT_CAP (1u << 20)
#define BATCH_BYTES (512 * 1024)
#define NL_RCVBUF (64 * 1024 * 1024)
#define NL_SNDBUF (8 * 1024 * 1024)

/* bpf_fib_lookup() return codes (uapi enum bpf_fib_lookup_ret). */
static const char *const fib_rc_names[] = {
	"success", "blackhole", "unreachable", "prohibit", "not_fwded",
	"fwd_disabled", "unsupp_lwt", "no_neigh", "frag_needed", "no_src_addr",
};
#define N_FIB_RC ((int)(sizeof(fib_rc_names) / sizeof(fib_rc_names[0])))

struct route {
	uint8_t addr[16]; /* network byte order; IPv4 uses the first 4 bytes */
	uint8_t len;
	uint8_t nh;
};

struct workload {
	const char *name;
	const char *path;
	uint8_t *data; /* addresses back to back, network byte order */
	size_t count;
};

/* Mirrors struct result in fib_lookup.bpf.c. */
struct result {
	int32_t rc;
	uint32_t gw[4];
};

static int family = 4;
static size_t alen = 4; /* address bytes */

/* ------------------------------------------------------------------------------------------ */

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kernel-xdp: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* Prints the skip record and exits 0: the engine cannot run here. */
static void skip(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "kernel-xdp: skip: %s\n", msg);
	printf("{\"engine\":\"" ENGINE "\",\"skip\":\"");
	for (const char *c = msg; *c; c++) {
		if (*c == '"' || *c == '\\')
			printf("\\%c", *c);
		else if ((unsigned char)*c < 0x20)
			printf(" ");
		else
			putchar(*c);
	}
	printf("\"}\n");
	fflush(stdout);
	exit(0);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: kernel-xdp --family 4|6 --routes FILE --out DIR [--workload NAME=FILE]...\n"
		"                  [--check-n N] [--runs R] [--bulk B] [--cpu C]\n"
		"Run inside the bench namespace (veth bench0 with 198.18.0.1/24, fd00:fb::1/64).\n");
	exit(2);
}

static unsigned long parse_ulong(const char *opt, const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		die("bad value for %s: '%s'", opt, s);
	return v;
}

/* ------------------------------------------------------------------------------------------ */
/* Input files                                                                               */

static struct route *read_routes(const char *path, size_t *n_out)
{
	FILE *f = fopen(path, "r");
	struct route *v = NULL;
	size_t n = 0, cap = 0, lineno = 0;
	char line[256];

	if (!f)
		die("cannot read routes file %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char pfx[128], *slash;
		unsigned len, nh;
		int fields;
		struct route r = { 0 };

		lineno++;
		if (!strchr(line, '\n') && !feof(f))
			die("%s:%zu: line too long", path, lineno);
		fields = sscanf(line, " %127s %u", pfx, &nh);
		if (fields <= 0 || pfx[0] == '#')
			continue;
		if (fields != 2)
			die("%s:%zu: expected 'PREFIX/LEN NH'", path, lineno);
		slash = strchr(pfx, '/');
		if (!slash)
			die("%s:%zu: prefix without length", path, lineno);
		*slash = 0;
		len = (unsigned)parse_ulong("prefix length", slash + 1);
		if (inet_pton(family == 4 ? AF_INET : AF_INET6, pfx, r.addr) != 1)
			die("%s:%zu: bad IPv%d address '%s'", path, lineno, family, pfx);
		if (len > alen * 8)
			die("%s:%zu: bad prefix length %u", path, lineno, len);
		if (nh >= 64)
			die("%s:%zu: next hop %u out of range 0..63", path, lineno, nh);
		r.len = (uint8_t)len;
		r.nh = (uint8_t)nh;
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				die("out of memory");
		}
		v[n++] = r;
	}
	if (ferror(f))
		die("error reading %s", path);
	fclose(f);
	*n_out = n;
	return v;
}

static void read_workload(struct workload *w)
{
	int fd = open(w->path, O_RDONLY);
	struct stat st;
	size_t got = 0;

	if (fd < 0 || fstat(fd, &st) < 0)
		die("cannot read workload %s: %s", w->path, strerror(errno));
	if ((size_t)st.st_size % alen)
		die("workload %s: size %lld is not a multiple of %zu", w->path, (long long)st.st_size,
		    alen);
	w->count = (size_t)st.st_size / alen;
	w->data = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!w->data)
		die("out of memory");
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, w->data + got, (size_t)st.st_size - got);

		if (r <= 0)
			die("error reading workload %s", w->path);
		got += (size_t)r;
	}
	close(fd);
}

/* ------------------------------------------------------------------------------------------ */
/* Netlink                                                                                   */

struct nl {
	int fd;
	uint8_t *buf;
	size_t used;
	uint32_t first_seq; /* seq of message i is first_seq + i */
	size_t failed;
	int first_err;
	size_t first_err_route;
	int lost; /* the receive buffer overflowed: some errors were not seen */
	uint8_t *fail; /* fail[i]: message i was refused */
	size_t n;      /* messages in the current call */
	uint8_t rbuf[1 << 16];
};

static void nl_open(struct nl *nl)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1, rcv = NL_RCVBUF, snd = NL_SNDBUF;
	struct timeval tmo = { .tv_sec = 300 };

	memset(nl, 0, sizeof(*nl));
	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nl->fd < 0)
		skip("netlink socket: %s", strerror(errno));
	if (bind(nl->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		skip("netlink bind: %s", strerror(errno));
	if (setsockopt(nl->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv)) < 0)
		setsockopt(nl->fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	if (setsockopt(nl->fd, SOL_SOCKET, SO_SNDBUFFORCE, &snd, sizeof(snd)) < 0)
		setsockopt(nl->fd, SOL_SOCKET, SO_SNDBUF, &snd, sizeof(snd));
	/* Errors carry only the failed message's header, not its payload. */
	setsockopt(nl->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	/* Never hang on a lost ack. */
	setsockopt(nl->fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	nl->buf = malloc(BATCH_BYTES + 4096);
	if (!nl->buf)
		die("out of memory");
}

static void nl_put_attr(struct nlmsghdr *h, unsigned short type, const void *data, size_t len)
{
	struct rtattr *rta = (struct rtattr *)((uint8_t *)h + NLMSG_ALIGN(h->nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

/* Appends an RTM_NEWROUTE / RTM_DELROUTE message for route r to the batch. */
static void nl_add_route(struct nl *nl, int type, const struct route *r, uint32_t seq, int ack,
			 int ifindex)
{
	struct nlmsghdr *h = (struct nlmsghdr *)(nl->buf + nl->used);
	struct rtmsg *rtm;
	uint8_t gw[16] = { 0 };
	uint32_t oif = (uint32_t)ifindex;

	memset(h, 0, NLMSG_SPACE(sizeof(*rtm)));
	h->nlmsg_len = NLMSG_LENGTH(sizeof(*rtm));
	h->nlmsg_type = (unsigned short)type;
	h->nlmsg_flags = NLM_F_REQUEST | (ack ? NLM_F_ACK : 0);
	if (type == RTM_NEWROUTE)
		h->nlmsg_flags |= NLM_F_CREATE | NLM_F_EXCL;
	h->nlmsg_seq = seq;
	rtm = NLMSG_DATA(h);
	rtm->rtm_family = family == 4 ? AF_INET : AF_INET6;
	rtm->rtm_dst_len = r->len;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_STATIC;
	rtm->rtm_scope = RT_SCOPE_UNIVERSE;
	rtm->rtm_type = RTN_UNICAST;
	nl_put_attr(h, RTA_DST, r->addr, alen);
	if (family == 4) {
		gw[0] = 198, gw[1] = 18, gw[2] = 0, gw[3] = (uint8_t)(10 + r->nh);
	} else {
		gw[0] = 0xfd, gw[1] = 0x00, gw[2] = 0x00, gw[3] = 0xfb;
		gw[15] = (uint8_t)(10 + r->nh);
	}
	nl_put_attr(h, RTA_GATEWAY, gw, alen);
	nl_put_attr(h, RTA_OIF, &oif, sizeof(oif));
	nl->used += NLMSG_ALIGN(h->nlmsg_len);
}

static void nl_send(struct nl *nl)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	ssize_t r;

	if (!nl->used)
		return;
	do {
		r = sendto(nl->fd, nl->buf, nl->used, 0, (struct sockaddr *)&sa, sizeof(sa));
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		skip("netlink send: %s", strerror(errno));
	if ((size_t)r != nl->used)
		skip("netlink send: short write %zd of %zu", r, nl->used);
	nl->used = 0;
}

/*
 * Reads what the kernel has answered: errors for failed messages, and the ack of the message
 * with sequence number wait_seq. Without wait (wait_seq == 0) it only drains what is there.
 * Returns 1 once wait_seq's answer was seen.
 */
static int nl_drain(struct nl *nl, uint32_t wait_seq)
{
	for (;;) {
		ssize_t n = recv(nl->fd, nl->rbuf, sizeof(nl->rbuf), wait_seq ? 0 : MSG_DONTWAIT);
		int done = 0;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				if (wait_seq)
					die("netlink: no answer from the kernel within 300 s");
				return 0;
			}
			if (errno == ENOBUFS) {
				nl->lost = 1;
				continue;
			}
			die("netlink recv: %s", strerror(errno));
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)nl->rbuf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				if (e->error) {
					uint32_t idx = h->nlmsg_seq - nl->first_seq;

					if (idx < nl->n)
						nl->fail[idx] = 1;
					if (!nl->failed) {
						nl->first_err = -e->error;
						nl->first_err_route = h->nlmsg_seq - nl->first_seq;
					}
					nl->failed++;
				}
				if (wait_seq && h->nlmsg_seq == wait_seq)
					done = 1;
			}
		}
		if (done)
			return 1;
	}
}

/*
 * Sends one message of `type` per route in large batches, only the last one asking for an ack,
 * and waits for that ack. Returns the seconds from the first send to the last ack.
 */
static double nl_routes(struct nl *nl, int type, const struct route *routes, size_t n,
			int ifindex)
{
	double t0;

	nl->failed = 0;
	nl->lost = 0;
	nl->first_seq = (uint32_t)time(NULL) << 4;
	nl->used = 0;
	nl->n = n;
	free(nl->fail);
	nl->fail = calloc(n ? n : 1, 1);
	if (!nl->fail)
		die("out of memory");
	if (!n)
		return 0;
	t0 = now_s();
	for (size_t i = 0; i < n; i++) {
		nl_add_route(nl, type, &routes[i], nl->first_seq + (uint32_t)i, i + 1 == n, ifindex);
		if (nl->used >= BATCH_BYTES) {
			nl_send(nl);
			nl_drain(nl, 0);
		}
	}
	nl_send(nl);
	nl_drain(nl, nl->first_seq + (uint32_t)(n - 1));
	return now_s() - t0;
}

/* ------------------------------------------------------------------------------------------ */
/* Kernel statistics                                                                         */

struct meminfo {
	long long slab, sunreclaim, percpu, vmalloc; /* kB */
};

static struct meminfo read_meminfo(void)
{
	struct meminfo m = { -1, -1, -1, -1 };
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];

	if (!f)
		return m;
	while (fgets(line, sizeof(line), f)) {
		long long v;

		if (sscanf(line, "Slab: %lld", &v) == 1)
			m.slab = v;
		else if (sscanf(line, "SUnreclaim: %lld", &v) == 1)
			m.sunreclaim = v;
		else if (sscanf(line, "Percpu: %lld", &v) == 1)
			m.percpu = v;
		else if (sscanf(line, "VmallocUsed: %lld", &v) == 1)
			m.vmalloc = v;
	}
	fclose(f);
	return m;
}

struct triestat {
	int ok;
	double depth_mean;
	long depth_max, leaves, internal;
};

/* The "Main:" section of /proc/net/fib_triestat (this namespace's IPv4 trie). */
static struct triestat read_triestat(void)
{
	struct triestat t = { 0 };
	FILE *f = fopen("/proc/net/fib_triestat", "r");
	char line[512];
	int in_main = 0, got = 0;

	if (!f)
		return t;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] != ' ' && line[0] != '\t') {
			if (in_main)
				break;
			in_main = strncmp(line, "Main:", 5) == 0;
			continue;
		}
		if (!in_main)
			continue;
		if (sscanf(line, " Aver depth: %lf", &t.depth_mean) == 1)
			got |= 1;
		else if (sscanf(line, " Max depth: %ld", &t.depth_max) == 1)
			got |= 2;
		else if (sscanf(line, " Leaves: %ld", &t.leaves) == 1)
			got |= 4;
		else if (sscanf(line, " Internal nodes: %ld", &t.internal) == 1)
			got |= 8;
	}
	fclose(f);
	t.ok = got == 15;
	return t;
}

static int read_sysctl_int(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* ------------------------------------------------------------------------------------------ */
/* BPF                                                                                       */

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

/* A 64-byte Ethernet + IPv4 + UDP frame: the programs do not look at it. */
static uint8_t pkt[64] = {
	0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02, 0x08, 0x00, /* Ethernet, IPv4 */
	0x45, 0, 0, 50, 0, 0, 0, 0, 64, 17, 0, 0,                   /* IPv4, UDP */
	198, 18, 0, 2, 198, 18, 1, 1,                               /* src, dst */
	0x30, 0x39, 0x00, 0x35, 0, 30, 0, 0,                        /* UDP */
};

/* Runs prog `repeat` times; returns the kernel's average ns per run, or -errno. */
static long test_run(int prog_fd, uint32_t repeat)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt, .data_size_in = sizeof(pkt),
		    .repeat = repeat);
	int err = bpf_prog_test_run_opts(prog_fd, &opts);

	if (err)
		return err < 0 ? err : -EINVAL;
	if (opts.retval != 2 /* XDP_PASS */)
		return -EPROTO;
	return (long)opts.duration;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Next-hop index from a lookup result: gateway 198.18.0.(10+k) / fd00:fb::(10+k) -> k. */
static int answer_nh(const struct result *r, const uint8_t *dst, size_t *n_nogw)
{
	const uint8_t *gw = (const uint8_t *)r->gw;
	static const uint8_t v6pfx[15] = { 0xfd, 0x00, 0x00, 0xfb };

	if (r->rc != 0)
		return -1;
	if (memcmp(gw, dst, alen) == 0) {
		/* Destination left as it was: a route without gateway (the connected subnet). */
		(*n_nogw)++;
		return -1;
	}
	if (family == 4) {
		if (gw[0] == 198 && gw[1] == 18 && gw[2] == 0 && gw[3] >= 10 && gw[3] < 74)
			return gw[3] - 10;
	} else {
		if (memcmp(gw, v6pfx, 15) == 0 && gw[15] >= 10 && gw[15] < 74)
			return gw[15] - 10;
	}
	(*n_nogw)++;
	return -1;
}

/* ------------------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	const char *routes_path = NULL, *out_dir = NULL;
	struct workload wl[MAX_WORKLOADS];
	int nwl = 0, runs = 5;
	size_t check_n = 10000;
	struct route *routes;
	size_t nroutes, max_count = 0, max_results = 1;
	int ifindex;
	struct fib_lookup *skel;
	int fd_fib, fd_base;
	struct addr_mm {
		uint32_t w[4];
	} *addrs_mm;
	size_t addrs_mm_len;
	struct nl *nl;
	struct meminfo m0, m1;
	double build_s;
	int err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			usage();
		if (!v)
			die("missing value for %s", a);
		i++;
		if (!strcmp(a, "--family")) {
			if (strcmp(v, "4") && strcmp(v, "6"))
				die("--family must be 4 or 6");
			family = v[0] - '0';
		} else if (!strcmp(a, "--routes")) {
			routes_path = v;
		} else if (!strcmp(a, "--out")) {
			out_dir = v;
		} else if (!strcmp(a, "--workload")) {
			const char *eq = strchr(v, '=');

			if (!eq || eq == v || !eq[1])
				die("--workload wants NAME=FILE, got '%s'", v);
			if (nwl == MAX_WORKLOADS)
				die("too many workloads");
			wl[nwl].name = strndup(v, (size_t)(eq - v));
			wl[nwl].path = eq + 1;
			nwl++;
		} else if (!strcmp(a, "--check-n")) {
			check_n = parse_ulong(a, v);
		} else if (!strcmp(a, "--runs")) {
			runs = (int)parse_ulong(a, v);
			if (runs < 1 || runs > 1000)
				die("--runs must be 1..1000");
		} else if (!strcmp(a, "--bulk") || !strcmp(a, "--cpu")) {
			parse_ulong(a, v); /* no bulk API; the orchestrator pins the process */
		} else {
			die("unknown option %s", a);
		}
	}
	if (!routes_path || !out_dir)
		usage();
	alen = family == 4 ? 4 : 16;
	{
		struct stat st;

		if (stat(out_dir, &st) < 0 || !S_ISDIR(st.st_mode))
			die("--out %s is not a directory", out_dir);
	}

	/* Inputs first: unreadable files are errors even where the engine would be skipped. */
	routes = read_routes(routes_path, &nroutes);
	for (int i = 0; i < nwl; i++) {
		read_workload(&wl[i]);
		if (wl[i].count > max_count)
			max_count = wl[i].count;
		if (wl[i].count && (wl[i].count < check_n ? wl[i].count : check_n) > max_results)
			max_results = wl[i].count < check_n ? wl[i].count : check_n;
	}
	if (max_count > UINT32_MAX / 2)
		die("workload too large");
	fprintf(stderr, "kernel-xdp: IPv%d, %zu routes, %d workloads\n", family, nroutes, nwl);

	/* What the engine needs. */
	if (geteuid() != 0)
		skip("needs root (netlink route changes, BPF)");
	ifindex = (int)if_nametoindex(DEV);
	if (!ifindex)
		skip("no interface " DEV " (not run inside the prepared bench namespace?)");

	/* BPF programs, loaded before the routes go in so their memory is not counted. */
	libbpf_set_print(libbpf_print);
	{
		struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

		setrlimit(RLIMIT_MEMLOCK, &rl); /* only matters on kernels before 5.11 */
	}
	skel = fib_lookup__open();
	if (!skel)
		skip("BPF open failed: %s", strerror(errno));
	skel->rodata->family = family == 4 ? AF_INET : AF_INET6;
	skel->rodata->ifindex = (uint32_t)ifindex;
	bpf_map__set_max_entries(skel->maps.addrs, (uint32_t)(max_count ? max_count : 1));
	bpf_map__set_max_entries(skel->maps.results, (uint32_t)max_results);
	err = fib_lookup__load(skel);
	if (err)
		skip("BPF load failed: %s", strerror(-err));
	fd_fib = bpf_program__fd(skel->progs.xdp_fib);
	fd_base = bpf_program__fd(skel->progs.xdp_base);
	addrs_mm_len = (max_count ? max_count : 1) * sizeof(struct addr_mm);
	addrs_mm = mmap(NULL, addrs_mm_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			bpf_map__fd(skel->maps.addrs), 0);
	if (addrs_mm == MAP_FAILED)
		skip("mmap of the BPF address map failed: %s", strerror(errno));
	if (!skel->bss || !skel->data)
		skip("BPF global data not mmapped (libbpf too old?)");
	/* One probe run: test_run and bpf_fib_lookup() work here. */
	{
		struct result r = { 0 };
		uint32_t key = 0;
		long d;

		memset(addrs_mm, 0, sizeof(*addrs_mm));
		skel->data->count = 1;
		skel->bss->pos = 0;
		skel->bss->nresults = 1;
		skel->bss->record = 1;
		d = test_run(fd_fib, 1);
		skel->bss->record = 0;
		if (d < 0)
			skip("BPF_PROG_TEST_RUN of the XDP program failed: %s", strerror((int)-d));
		bpf_map_lookup_elem(bpf_map__fd(skel->maps.results), &key, &r);
		if (r.rc < 0)
			skip("bpf_fib_lookup() returned %s", strerror(-r.rc));
		if (r.rc == 5 /* BPF_FIB_LKUP_RET_FWD_DISABLED */) {
			char p[128];

			snprintf(p, sizeof(p), "/proc/sys/net/ipv%d/conf/%s/forwarding", family,
				 family == 4 ? DEV : "all");
			skip("forwarding is off (bpf_fib_lookup: fwd_disabled; %s = %d)", p,
			     read_sysctl_int(p));
		}
		d = test_run(fd_base, 1);
		if (d < 0)
			skip("BPF_PROG_TEST_RUN of the baseline program failed: %s",
			     strerror((int)-d));
	}

	/* build and memory */
	nl = malloc(sizeof(*nl));
	if (!nl)
		die("out of memory");
	nl_open(nl);
	m0 = read_meminfo();
	build_s = nl_routes(nl, RTM_NEWROUTE, routes, nroutes, ifindex);
	usleep(300 * 1000); /* let RCU-deferred frees of replaced trie nodes happen */
	m1 = read_meminfo();
	if (nl->lost)
		fprintf(stderr, "kernel-xdp: netlink receive buffer overflowed: failed_routes is a "
				"lower bound\n");
	if (nl->failed) {
		char a[INET6_ADDRSTRLEN] = "?";

		if (nl->first_err_route < nroutes)
			inet_ntop(family == 4 ? AF_INET : AF_INET6,
				  routes[nl->first_err_route].addr, a, sizeof(a));
		fprintf(stderr, "kernel-xdp: %zu of %zu routes refused; first: %s/%u: %s\n",
			nl->failed, nroutes, a,
			nl->first_err_route < nroutes ? routes[nl->first_err_route].len : 0,
			strerror(nl->first_err));
	}
	if (nroutes && nl->failed >= nroutes)
		skip("the kernel refused every route (first error: %s)", strerror(nl->first_err));
	fprintf(stderr, "kernel-xdp: build %.3f s (%.0f routes/s)\n", build_s,
		build_s > 0 ? (double)nroutes / build_s : 0.0);
	printf("{\"engine\":\"" ENGINE "\",\"metric\":\"build\",\"value\":%.6f,\"unit\":\"s\","
	       "\"runs\":1,\"spread\":0}\n",
	       build_s);
	printf("{\"engine\":\"" ENGINE "\",\"metric\":\"failed_routes\",\"value\":%zu,"
	       "\"unit\":\"routes\",\"runs\":1,\"spread\":0}\n",
	       nl->failed);
	if (m0.sunreclaim >= 0 && m1.sunreclaim >= 0 && m0.percpu >= 0 && m1.percpu >= 0 &&
	    m0.vmalloc >= 0 && m1.vmalloc >= 0) {
		long long d = (m1.sunreclaim - m0.sunreclaim) + (m1.percpu - m0.percpu) +
			      (m1.vmalloc - m0.vmalloc);

		fprintf(stderr,
			"kernel-xdp: meminfo deltas (kB): Slab %lld, SUnreclaim %lld, Percpu %lld, "
			"VmallocUsed %lld\n",
			m1.slab - m0.slab, m1.sunreclaim - m0.sunreclaim, m1.percpu - m0.percpu,
			m1.vmalloc - m0.vmalloc);
		printf("{\"engine\":\"" ENGINE "\",\"metric\":\"memory\",\"value\":%lld,"
		       "\"unit\":\"bytes\",\"runs\":1,\"spread\":0,\"note\":\"meminfo Slab delta "
		       "(SUnreclaim) + Percpu + VmallocUsed deltas around insertion, system-wide\"}\n",
		       d * 1024);
	}
	if (family == 4) {
		struct triestat t = read_triestat();

		if (t.ok) {
			printf("{\"engine\":\"" ENGINE "\",\"metric\":\"depth_max\",\"value\":%ld,"
			       "\"unit\":\"levels\",\"runs\":1,\"spread\":0,\"note\":\"fib_triestat "
			       "Main Max depth\"}\n",
			       t.depth_max);
			printf("{\"engine\":\"" ENGINE "\",\"metric\":\"depth_mean\",\"value\":%.2f,"
			       "\"unit\":\"levels\",\"runs\":1,\"spread\":0,\"note\":\"fib_triestat "
			       "Main Aver depth\"}\n",
			       t.depth_mean);
			printf("{\"engine\":\"" ENGINE "\",\"metric\":\"nodes\",\"value\":%ld,"
			       "\"unit\":\"nodes\",\"runs\":1,\"spread\":0,\"note\":\"fib_triestat "
			       "Main Internal nodes + Leaves (local routes included)\"}\n",
			       t.internal + t.leaves);
		}
	}

	/* Per workload: check file, then lookup timing. */
	for (int w = 0; w < nwl; w++) {
		struct workload *W = &wl[w];
		size_t nres = W->count < check_n ? W->count : check_n;
		uint32_t repeat = (uint32_t)(W->count < REPEAT_CAP ? W->count : REPEAT_CAP);
		size_t hist[N_FIB_RC + 1] = { 0 }, n_nogw = 0, n_found = 0;
		char path[4096];
		FILE *f;
		double *lk;

		for (size_t i = 0; i < W->count; i++) {
			memset(&addrs_mm[i], 0, sizeof(addrs_mm[i]));
			memcpy(&addrs_mm[i], W->data + i * alen, alen);
		}
		skel->data->count = (uint32_t)(W->count ? W->count : 1);

		/* Answers */
		snprintf(path, sizeof(path), "%s/" ENGINE ".%s.check", out_dir, W->name);
		f = fopen(path, "w");
		if (!f)
			die("cannot write %s: %s", path, strerror(errno));
		if (nres) {
			int rfd = bpf_map__fd(skel->maps.results);
			long d;

			skel->bss->pos = 0;
			skel->bss->nresults = (uint32_t)nres;
			skel->bss->record = 1;
			d = test_run(fd_fib, (uint32_t)nres);
			skel->bss->record = 0;
			if (d < 0)
				die("BPF_PROG_TEST_RUN failed: %s", strerror((int)-d));
			for (size_t i = 0; i < nres; i++) {
				struct result r;
				uint32_t key = (uint32_t)i;
				int nh;

				if (bpf_map_lookup_elem(rfd, &key, &r))
					die("reading results: %s", strerror(errno));
				hist[r.rc >= 0 && r.rc < N_FIB_RC ? r.rc : N_FIB_RC]++;
				nh = answer_nh(&r, W->data + i * alen, &n_nogw);
				n_found += nh >= 0;
				fprintf(f, "%d\n", nh);
			}
		}
		if (fclose(f))
			die("cannot write %s", path);
		fprintf(stderr, "kernel-xdp: %s: %zu addresses, %zu answers written, %zu with a bench "
				"next hop;",
			W->name, W->count, nres, n_found);
		for (int c = 0; c <= N_FIB_RC; c++)
			if (hist[c])
				fprintf(stderr, " %s %zu", c < N_FIB_RC ? fib_rc_names[c] : "other",
					hist[c]);
		if (n_nogw)
			fprintf(stderr, "; %zu successes without a bench gateway", n_nogw);
		fprintf(stderr, "\n");

		if (!W->count)
			continue;

		/* Timing: a warm-up pass of each program, then runs of (baseline, fib) pairs, each
		 * starting from the first address. */
		if (repeat < REPEAT_MIN)
			repeat = REPEAT_MIN;
		lk = calloc((size_t)runs, sizeof(*lk));
		if (!lk)
			die("out of memory");
		for (int r = -1; r < runs; r++) {
			long base, fib;

			skel->bss->pos = 0;
			base = test_run(fd_base, repeat);
			skel->bss->pos = 0;
			fib = test_run(fd_fib, repeat);
			if (base < 0 || fib < 0)
				die("BPF_PROG_TEST_RUN failed: %s",
				    strerror((int)-(base < 0 ? base : fib)));
			if (r >= 0) {
				lk[r] = (double)(fib - base);
				fprintf(stderr, "kernel-xdp: %s run %d: fib %ld ns, baseline %ld ns\n",
					W->name, r, fib, base);
			}
		}
		{
			double med = median(lk, runs);
			double *dev = calloc((size_t)runs, sizeof(*dev));

			for (int r = 0; r < runs; r++)
				dev[r] = lk[r] > med ? lk[r] - med : med - lk[r];
			printf("{\"engine\":\"" ENGINE "\",\"metric\":\"lookup\",\"workload\":\"%s\","
			       "\"value\":%.1f,\"unit\":\"ns\",\"runs\":%d,\"spread\":%.1f}\n",
			       W->name, med, runs, median(dev, runs));
			free(dev);
		}
		free(lk);
	}

	/* Leave the namespace as it was found: delete the routes that went in. */
	{
		size_t k = 0;
		double t;

		for (size_t i = 0; i < nroutes; i++)
			if (!nl->fail[i])
				routes[k++] = routes[i];
		t = nl_routes(nl, RTM_DELROUTE, routes, k, ifindex);

		fprintf(stderr, "kernel-xdp: routes deleted in %.3f s", t);
		if (nl->failed)
			fprintf(stderr, " (%zu deletions failed: %s)", nl->failed,
				strerror(nl->first_err));
		fprintf(stderr, "\n");
	}
	munmap(addrs_mm, addrs_mm_len);
	fib_lookup__destroy(skel);
	return 0;
}
