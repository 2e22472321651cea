// Elemwise formulas on integer and bool data, in int64. Every input dtype fits int64 exactly;
// sums and products go through uint64 so that overflow wraps (defined) instead of being UB, and
// the store's conversion to the narrow dtype wraps again, like two's complement hardware.
#include <algorithm>

#include "src/naive/elemwise_scalar.h"

namespace neomeg::dnn::naive::elemwise {

namespace {

int64_t wrap_add(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

int64_t wrap_mul(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// Python's // and %: the quotient rounds toward -inf, the remainder has the divisor's sign.
// A zero divisor gives 0 for both rather than a hardware trap.
int64_t floor_div(int64_t a, int64_t b) {
    if (b == 0)
        return 0;
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0)))
        --q;
    return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
    if (b == 0)
        return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return r;
}

int64_t sign(int64_t a) {
    return (a > 0) - (a < 0);
}

// Counts outside [0, bits) would be UB in C++; they give what shifting one bit at a time would.
int64_t shift_left(int64_t a, int64_t n, int64_t bits) {
    if (n < 0 || n >= bits)
        return 0;
    return static_cast<int64_t>(static_cast<uint64_t>(a) << n);
}

int64_t shift_right(int64_t a, int64_t n, int64_t bits) {
    if (n < 0 || n >= bits)
        return a < 0 ? -1 : 0;
    return a >> n;
}

}  // namespace

int64_t eval_int(Mode mode, const int64_t* x, DType dt) {
    int64_t a = x[0];
    switch (mode) {
        case Mode::RELU:
            return std::max<int64_t>(a, 0);
        case Mode::ABS:
            return a < 0 ? -a : a;
        case Mode::NEGATE:
            return -a;
        case Mode::SQUARE:
            return wrap_mul(a, a);
        case Mode::ROUND:
        case Mode::FLOOR:
        case Mode::CEIL:
            return a;
        case Mode::SIGN:
            return sign(a);
        case Mode::NOT:
            return a == 0;
        case Mode::ISNAN:
        case Mode::ISINF:
            return 0;
        default:
            break;
    }
    int64_t b = x[1];
    int64_t bits = static_cast<int64_t>(dt.size() * 8);
    switch (mode) {
        case Mode::ADD:
            return wrap_add(a, b);
        case Mode::SUB:
            return wrap_add(a, -b);
        case Mode::MUL:
            return wrap_mul(a, b);
        case Mode::FLOOR_DIV:
            return floor_div(a, b);
        case Mode::MOD:
            return floor_mod(a, b);
        case Mode::MAX:
            return std::max(a, b);
        case Mode::MIN:
            return std::min(a, b);
        case Mode::EQ:
            return a == b;
        case Mode::NE:
            return a != b;
        case Mode::LT:
            return a < b;
        case Mode::LEQ:
            return a <= b;
        // On bool data (0/1) the bitwise forms are the logical ones.
        case Mode::AND:
            return a & b;
        case Mode::OR:
            return a | b;
        case Mode::XOR:
            return a ^ b;
        case Mode::SHL:
            return shift_left(a, b, bits);
        case Mode::SHR:
            return shift_right(a, b, bits);
        case Mode::SWITCH_GT0:
            return a > 0 ? b : 0;
        case Mode::ABS_GRAD:
            return a > 0 ? b : wrap_mul(-1, b);  // MegDNN's: -dy at 0
        default:
            break;
    }
    int64_t c = x[2];
    switch (mode) {
        case Mode::CLIP: {
            // NumPy's order: hi wins when lo > hi.
            int64_t t = a < b ? b : a;
            return t > c ? c : t;
        }
        case Mode::FUSE_MUL_ADD3:
            return wrap_add(wrap_mul(a, b), c);
        case Mode::COND:
            return a != 0 ? b : c;
        case Mode::FUSE_MUL_ADD4:
            return wrap_add(wrap_mul(a, b), wrap_mul(c, x[3]));
        default:
            break;
    }
    throw NotSupportedError(
            str_cat("naive Elemwise: no integer formula for mode ", to_string(mode)));
}

}  // namespace neomeg::dnn::naive::elemwise
