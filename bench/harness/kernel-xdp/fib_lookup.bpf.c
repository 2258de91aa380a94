// SPDX-License-Identifier: GPL-2.0
/*
 * XDP programs for the kernel-xdp harness (bench/harness/PROTOCOL.md).
 *
 * Each run of `xdp_fib` takes the next address of the workload from `addrs`, asks the kernel's
 * routing table with bpf_fib_lookup() (input mode, default rules, neighbour lookup skipped) and,
 * when `record` is set, stores the answer in `results`. `xdp_base` does exactly the same work
 * without the bpf_fib_lookup() call: its time per run is subtracted from xdp_fib's.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define AF_INET_ 2
#define AF_INET6_ 10
#define IPPROTO_UDP_ 17
/* BPF_FIB_LOOKUP_SKIP_NEIGH (kernel 6.2+); spelled out in case the uapi headers predate it. */
#define FIB_SKIP_NEIGH (1U << 2)

struct addr {
	__u32 w[4]; /* network byte order; IPv4 uses w[0] */
};

struct result {
	__s32 rc;   /* bpf_fib_lookup() return code */
	__u32 gw[4]; /* params.ipv4_dst / ipv6_dst after the call */
};

/* Sized from user space (bpf_map__set_max_entries) to the largest workload. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct addr);
	__uint(max_entries, 1);
} addrs SEC(".maps");

/* Sized from user space to the number of answers wanted for the check file. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct result);
	__uint(max_entries, 1);
} results SEC(".maps");

/* Set before load. */
const volatile __u32 family = AF_INET_;
const volatile __u32 ifindex = 0;

/* Set between runs through the mmapped .data/.bss. */
__u32 count = 1;    /* addresses in the current workload (<= addrs' max_entries) */
__u32 pos = 0;      /* next address to look up */
__u32 record = 0;   /* store answers into results[pos] while pos < nresults */
__u32 nresults = 0;

static __always_inline int one_lookup(struct xdp_md *ctx, const int do_fib)
{
	struct bpf_fib_lookup p = {};
	struct addr *a;
	__u32 i = pos;
	__u32 next = i + 1;
	long rc;

	if (next >= count)
		next = 0;
	pos = next;

	a = bpf_map_lookup_elem(&addrs, &i);
	if (!a)
		return XDP_PASS;

	p.l4_protocol = IPPROTO_UDP_;
	p.tot_len = 0; /* no MTU check */
	p.ifindex = ifindex;
	if (family == AF_INET_) {
		p.family = AF_INET_;
		p.ipv4_src = __builtin_bswap32(0xc6120002); /* 198.18.0.2, a host on bench0 */
		p.ipv4_dst = a->w[0];
	} else {
		p.family = AF_INET6_;
		p.ipv6_src[0] = __builtin_bswap32(0xfd0000fb); /* fd00:fb::2 */
		p.ipv6_src[3] = __builtin_bswap32(2);
		p.ipv6_dst[0] = a->w[0];
		p.ipv6_dst[1] = a->w[1];
		p.ipv6_dst[2] = a->w[2];
		p.ipv6_dst[3] = a->w[3];
	}

	if (do_fib) {
		rc = bpf_fib_lookup(ctx, &p, sizeof(p), FIB_SKIP_NEIGH);
	} else {
		rc = 0;
		/* The compiler must assume p is read, so the baseline fills it as xdp_fib does. */
		asm volatile("" : : "r"(&p) : "memory");
	}

	if (record && i < nresults) {
		struct result *r = bpf_map_lookup_elem(&results, &i);

		if (r) {
			r->rc = (__s32)rc;
			r->gw[0] = p.ipv6_dst[0];
			r->gw[1] = p.ipv6_dst[1];
			r->gw[2] = p.ipv6_dst[2];
			r->gw[3] = p.ipv6_dst[3];
		}
	}
	return XDP_PASS;
}

SEC("xdp")
int xdp_fib(struct xdp_md *ctx)
{
	return one_lookup(ctx, 1);
}

SEC("xdp")
int xdp_base(struct xdp_md *ctx)
{
	return one_lookup(ctx, 0);
}

char LICENSE[] SEC("license") = "GPL";
