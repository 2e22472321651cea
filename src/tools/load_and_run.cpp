// load_and_run: loads a model file, feeds its inputs (from .npy files by input name, or random
// values), runs it N times after warm-up, and prints each output's shape and summary and the time
// per run (min and median), like MegEngine's load_and_run. Built on the public inference API.
//
//   load_and_run model.nmeg [--input NAME=FILE.npy]... [--input-shape NAME=2,3,...]...
//                [--iters N] [--warmup N] [--seed S] [--print K] [--output-dir DIR] [--device D]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "neomeg/inference/model.h"
#include "npy.h"

namespace {

using neomeg::inference::HostTensor;
using neomeg::inference::Model;

const char kUsage[] =
        "usage: load_and_run MODEL [options]\n"
        "  --input NAME=FILE.npy     feed input NAME from a .npy file (others get random values)\n"
        "  --input-shape NAME=D,D,.. the shape of a random input with dynamic (-1) dimensions\n"
        "  --iters N                 timed runs (default 10)\n"
        "  --warmup N                untimed runs first (default 1)\n"
        "  --seed S                  random input seed (default 0)\n"
        "  --print K                 print the first K values of each output (default 8)\n"
        "  --output-dir DIR          write each output of the last run to DIR/NAME.npy\n"
        "  --device D                where to run (default cpu0)\n";

struct Args {
    std::string model;
    std::map<std::string, std::string> npy;
    std::map<std::string, std::vector<int64_t>> shapes;
    int iters = 10, warmup = 1, print = 8;
    unsigned seed = 0;
    std::string output_dir, device = "cpu0";
};

std::pair<std::string, std::string> split_eq(const std::string& s, const char* opt) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
        throw std::invalid_argument(std::string(opt) + " expects NAME=VALUE, got '" + s + "'");
    return {s.substr(0, eq), s.substr(eq + 1)};
}

int to_int(const std::string& s, const char* opt) {
    size_t used = 0;
    int v = std::stoi(s, &used);
    if (used != s.size() || v < 0)
        throw std::invalid_argument(std::string(opt) + " expects a count, got '" + s + "'");
    return v;
}

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        std::string opt = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc)
                throw std::invalid_argument(opt + " needs a value");
            return argv[++i];
        };
        if (opt == "--input") {
            auto [n, v] = split_eq(value(), "--input");
            a.npy[n] = v;
        } else if (opt == "--input-shape") {
            auto [n, v] = split_eq(value(), "--input-shape");
            std::vector<int64_t> dims;
            size_t pos = 0;
            while (pos <= v.size()) {
                size_t comma = v.find(',', pos);
                dims.push_back(to_int(v.substr(pos, comma - pos), "--input-shape"));
                if (comma == std::string::npos)
                    break;
                pos = comma + 1;
            }
            a.shapes[n] = dims;
        } else if (opt == "--iters") {
            a.iters = to_int(value(), "--iters");
        } else if (opt == "--warmup") {
            a.warmup = to_int(value(), "--warmup");
        } else if (opt == "--seed") {
            a.seed = static_cast<unsigned>(to_int(value(), "--seed"));
        } else if (opt == "--print") {
            a.print = to_int(value(), "--print");
        } else if (opt == "--output-dir") {
            a.output_dir = value();
        } else if (opt == "--device") {
            a.device = value();
        } else if (opt == "-h" || opt == "--help") {
            std::cout << kUsage;
            std::exit(0);
        } else if (!opt.empty() && opt[0] == '-') {
            throw std::invalid_argument("unknown option " + opt);
        } else if (a.model.empty()) {
            a.model = opt;
        } else {
            throw std::invalid_argument("more than one model given: " + opt);
        }
    }
    if (a.model.empty())
        throw std::invalid_argument("no model given");
    if (a.iters < 1)
        throw std::invalid_argument("--iters must be at least 1");
    return a;
}

std::string shape_str(const std::vector<int64_t>& s) {
    std::string out = "(";
    for (size_t i = 0; i < s.size(); ++i)
        out += (i ? ", " : "") + std::to_string(s[i]);
    return out + (s.size() == 1 ? ",)" : ")");
}

// Random values of `dtype`: uniform [0, 1) for floats, [0, 10) for integers, 0/1 for bool.
HostTensor random_tensor(const std::string& dtype, const std::vector<int64_t>& shape,
                         std::mt19937& rng) {
    size_t n = 1;
    for (int64_t d : shape)
        n *= static_cast<size_t>(d);
    std::vector<std::byte> bytes;
    auto put = [&](const auto& v) {
        const auto* p = reinterpret_cast<const std::byte*>(&v);
        bytes.insert(bytes.end(), p, p + sizeof v);
    };
    std::uniform_real_distribution<float> uf(0, 1);
    std::uniform_int_distribution<int> ui(0, 9);
    for (size_t i = 0; i < n; ++i) {
        if (dtype == "float32")
            put(uf(rng));
        else if (dtype == "int32")
            put(static_cast<int32_t>(ui(rng)));
        else if (dtype == "int16")
            put(static_cast<int16_t>(ui(rng)));
        else if (dtype == "int8")
            put(static_cast<int8_t>(ui(rng)));
        else if (dtype == "uint8")
            put(static_cast<uint8_t>(ui(rng)));
        else if (dtype == "bool")
            put(static_cast<uint8_t>(ui(rng) % 2));
        else
            throw std::invalid_argument("no random values for a " + dtype +
                                        " input; give it with --input");
    }
    return {dtype, shape, std::move(bytes)};
}

void print_output(const std::string& name, const HostTensor& t, int print) {
    auto v = t.to_doubles();
    std::printf("output %s: %s %s", name.c_str(), shape_str(t.shape()).c_str(), t.dtype().c_str());
    if (!v.empty()) {
        double lo = *std::min_element(v.begin(), v.end()),
               hi = *std::max_element(v.begin(), v.end());
        double sum = 0;
        for (double x : v)
            sum += x;
        std::printf(" min %.6g max %.6g mean %.6g", lo, hi, sum / static_cast<double>(v.size()));
    }
    std::printf("\n");
    if (print > 0 && !v.empty()) {
        std::printf("  values:");
        for (size_t i = 0; i < v.size() && i < static_cast<size_t>(print); ++i)
            std::printf(" %.6g", v[i]);
        std::printf(v.size() > static_cast<size_t>(print) ? " ...\n" : "\n");
    }
}

int run(const Args& a) {
    auto t0 = std::chrono::steady_clock::now();
    Model model = Model::load(a.model, {.device = a.device});
    double load_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count();
    std::printf("model %s: format version %u, produced by %s, loaded in %.2f ms\n", a.model.c_str(),
                model.format_version(), model.producer().c_str(), load_ms);
    if (!model.user_info().empty())
        std::printf("user_info: %s\n", model.user_info().c_str());

    for (const auto& [name, path] : a.npy)
        model.input(name);  // an unknown name fails before anything runs
    for (const auto& [name, shape] : a.shapes)
        model.input(name);
    std::mt19937 rng(a.seed);
    for (const auto& info : model.inputs()) {
        HostTensor value;
        const char* from = "random";
        if (auto it = a.npy.find(info.name); it != a.npy.end()) {
            value = neomeg::tools::read_npy(it->second);
            from = it->second.c_str();
        } else {
            auto shape = model.input(info.name).shape;
            if (auto s = a.shapes.find(info.name); s != a.shapes.end())
                shape = s->second;
            value = random_tensor(info.dtype, shape, rng);
        }
        model.set_input(info.name, value);
        std::printf("input %s: %s %s (declared %s) from %s\n", info.name.c_str(),
                    shape_str(value.shape()).c_str(), value.dtype().c_str(),
                    shape_str(info.shape).c_str(), from);
    }

    for (int i = 0; i < a.warmup; ++i)
        model.run();
    std::vector<double> ms;
    for (int i = 0; i < a.iters; ++i) {
        auto start = std::chrono::steady_clock::now();
        model.run();
        ms.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                        .count());
    }
    for (const auto& name : model.output_names()) {
        auto t = model.output(name);
        print_output(name, t, a.print);
        if (!a.output_dir.empty())
            neomeg::tools::write_npy(a.output_dir + "/" + name + ".npy", t);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("time per run over %d runs (after %d warm-up): min %.3f ms, median %.3f ms\n",
                a.iters, a.warmup, ms.front(), ms[ms.size() / 2]);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Args args;
    try {
        args = parse(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "load_and_run: %s\n%s", e.what(), kUsage);
        return 2;
    }
    try {
        return run(args);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "load_and_run: %s\n", e.what());
        return 1;
    }
}
