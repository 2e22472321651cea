// classify: runs a model whose first input is a float32 batch of rows (shape {N, ...}, N
// possibly dynamic) on the numbers given on the command line, and prints each output's shape and,
// per row, the index of its largest value: a classifier's predicted class.
//
//   classify MODEL [VALUE...]      (no values: one row of ones)
#include <neomeg/inference/model.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: classify MODEL [VALUE...]\n");
        return 2;
    }
    try {
        auto model = neomeg::inference::Model::load(argv[1]);
        std::printf("model by %s, user_info '%s'\n", model.producer().c_str(),
                    model.user_info().c_str());
        for (const auto& in : model.inputs()) {
            std::printf("input %s: %s [", in.name.c_str(), in.dtype.c_str());
            for (int64_t d : in.shape)
                std::printf(" %lld", static_cast<long long>(d));  // -1: set at run time
            std::printf(" ]\n");
        }

        // The first input: the values given, as rows of the model's row size.
        const auto& first = model.inputs().at(0);
        auto shape = model.input(first.name).shape;  // the current, concrete shape
        int64_t row = 1;
        for (size_t i = 1; i < shape.size(); ++i)
            row *= shape[i];
        std::vector<float> values;
        for (int i = 2; i < argc; ++i)
            values.push_back(std::strtof(argv[i], nullptr));
        if (values.empty())
            values.assign(static_cast<size_t>(row), 1.f);
        if (shape.empty() || values.size() % static_cast<size_t>(row) != 0) {
            std::fprintf(stderr, "give a multiple of %lld values\n", static_cast<long long>(row));
            return 2;
        }
        shape[0] = static_cast<int64_t>(values.size()) / row;
        model.set_input(first.name, values.data(), shape);

        model.run();

        for (const auto& name : model.output_names()) {
            auto out = model.output(name);
            auto v = out.to_doubles();
            std::printf("output %s: %s [", name.c_str(), out.dtype().c_str());
            for (int64_t d : out.shape())
                std::printf(" %lld", static_cast<long long>(d));
            std::printf(" ]\n");
            size_t rows = out.shape().empty() ? 1 : static_cast<size_t>(out.shape()[0]);
            size_t per_row = rows ? v.size() / rows : 0;
            for (size_t r = 0; r < rows && per_row; ++r) {
                size_t best = 0;
                for (size_t j = 1; j < per_row; ++j)
                    if (v[r * per_row + j] > v[r * per_row + best])
                        best = j;
                std::printf("  row %zu: class %zu (%.4f)\n", r, best, v[r * per_row + best]);
            }
        }
    } catch (const neomeg::inference::ModelError& e) {
        std::fprintf(stderr, "not a usable model: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
