# Random number generators and the non-finite check of dynamic loss scaling. Every generator draws
# from a counter-based Philox4x32-10 stream (dnn/src/common/philox.h): element i's value depends
# only on (seed, i), never on thread count or call order. Output shapes come from the caller.
# The DSL (params, field, enum, op) is documented in dnn/ops/opgen/model.py.

op(
    "UniformRNG",
    "Uniform values in [0, 1).",
    inputs=[],
    outputs=["dst"],
    param=params(
        "UniformRNG",
        "Seed and float dtype of a uniform generator.",
        field("seed", "uint64", 0, "key of the Philox stream"),
        field("dtype", "dtype", "Float32", "dtype of dst (float32, float16 or bfloat16)"),
    ),
)

op(
    "GaussianRNG",
    "Normal values of the given mean and standard deviation (Box-Muller on Philox pairs).",
    inputs=[],
    outputs=["dst"],
    param=params(
        "GaussianRNG",
        "Seed, distribution and float dtype of a Gaussian generator.",
        field("seed", "uint64", 0, "key of the Philox stream"),
        field("mean", "float32", 0.0, "mean of the distribution"),
        field("std", "float32", 1.0, "standard deviation of the distribution, >= 0"),
        field("dtype", "dtype", "Float32", "dtype of dst (float32, float16 or bfloat16)"),
    ),
)

op(
    "PermutationRNG",
    "A random permutation of 0..n-1 in a 1-D dst of n elements.",
    inputs=[],
    outputs=["dst"],
    param=params(
        "PermutationRNG",
        "Seed and dtype of a permutation generator.",
        field("seed", "uint64", 0, "key of the Philox stream"),
        field("dtype", "dtype", "Int32", "dtype of dst (int32 or float32)"),
    ),
)

op(
    "CheckNonFinite",
    "dst = {1} if any element of any input is NaN or infinite, else {0} (int32, shape {1}).",
    inputs=["*srcs"],
    outputs=["dst"],
)
