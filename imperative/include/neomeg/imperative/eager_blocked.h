// Eager mode's channel-blocked activations (docs/architecture.md, "Blocked activations"): on a
// comp node whose kernels prefer a channel block, convolutions write ChannelBlock's layout and the
// operators that have blocked twins keep it, as a traced graph does. NEOMEG_EAGER_BLOCKED=0 turns
// it off for the process; the setter is for tests and benchmarks that compare both.
#pragma once

namespace neomeg::imperative {

bool eager_blocked_enabled();
void set_eager_blocked(bool on);

}  // namespace neomeg::imperative
