/* Shared by xdp_count.bpf.c and its loader (xvb-xdpcount). */
#pragma once

enum xvb_count_slot { XVB_COUNT_PACKETS = 0, XVB_COUNT_BYTES = 1, XVB_COUNT_SLOTS = 2 };
enum xvb_action { XVB_ACTION_DROP = 0, XVB_ACTION_PASS = 1 };
