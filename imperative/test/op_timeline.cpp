// The eager op timeline (megengine.utils.profiler's source): calls are recorded between
// timeline_start and timeline_stop only, in order, with their op, params and input layouts.
#include "neomeg/imperative/op_timeline.h"

#include <gtest/gtest.h>

#include <vector>

#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/elemwise.h"

using namespace neomeg;
using namespace neomeg::imperative;

namespace {

Tensor elemwise(dnn::param::Elemwise::Mode mode, const Tensor& x) {
    dnn::param::Elemwise p;
    p.mode = mode;
    std::vector<Tensor> in{x};
    return imperative::apply(ops::Elemwise(p), in)[0];
}

}  // namespace

TEST(OpTimeline, RecordsTheCallsBetweenStartAndStop) {
    using Mode = dnn::param::Elemwise::Mode;
    auto cn = CompNode::load("cpu0");
    std::vector<float> v{-1, 2, -3};
    auto x = Tensor::from_host(v.data(), {3}, dnn::dtype::Float32, cn);
    elemwise(Mode::RELU, x);  // before: not recorded
    EXPECT_FALSE(timeline_recording());
    const int64_t before = timeline_now_ns();
    timeline_start();
    EXPECT_TRUE(timeline_recording());
    auto y = elemwise(Mode::NEGATE, elemwise(Mode::RELU, x));
    auto events = timeline_stop();
    const int64_t after = timeline_now_ns();
    elemwise(Mode::EXP, y);  // after: not recorded
    EXPECT_FALSE(timeline_recording());
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].name, "Elemwise(mode=RELU)");
    EXPECT_EQ(events[1].name, "Elemwise(mode=NEGATE)");
    EXPECT_EQ(events[0].params, "Elemwise(mode=RELU)");
    EXPECT_EQ(events[0].inputs, (std::vector<std::string>{"{3(1)} float32"}));
    EXPECT_EQ(events[0].thread, 0u);
    for (const auto& e : events) {
        EXPECT_GE(e.start_ns, before);
        EXPECT_GE(e.duration_ns, 0);
        EXPECT_LE(e.start_ns + e.duration_ns, after);
    }
    EXPECT_LE(events[0].start_ns + events[0].duration_ns, events[1].start_ns);
    EXPECT_TRUE(timeline_stop().empty());  // taken once
}
