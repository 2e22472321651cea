// A shared library opened with dlopen, for the CUDA libraries NeoMeg does not link (libs/*_api.h).
// It is never closed: library handles (a cuDNN handle in a comp node's dnn handle) may be
// destroyed during exit, after any static object.
#pragma once

#include <string>
#include <vector>

// "cublasCreate_v2" for cublasCreate: the name after macro expansion, the symbol the library
// exports (cublas_v2.h maps the API names to versioned symbols).
#define NM_SYMBOL_NAME_(x) #x
#define NM_SYMBOL_NAME(x) NM_SYMBOL_NAME_(x)

namespace neomeg::dnn::cuda {

class DynamicLibrary {
public:
    // Opens the first of `candidates` the dynamic loader finds (RTLD_LOCAL, so that its symbols
    // never interpose on another copy of the library the process may hold).
    static DynamicLibrary open(const std::vector<std::string>& candidates);

    bool ok() const { return m_handle != nullptr; }
    // The candidate that opened.
    const std::string& file() const { return m_file; }
    // Why none opened: each candidate with the dynamic loader's words.
    const std::string& error() const { return m_error; }

    // The entry point `name`, or nullptr (its name appended to `missing`).
    template <class Fn>
    Fn resolve(const char* name, std::vector<std::string>& missing) const {
        void* p = symbol(name);
        if (!p)
            missing.emplace_back(name);
        return reinterpret_cast<Fn>(p);
    }
    void* symbol(const char* name) const;

private:
    void* m_handle = nullptr;
    std::string m_file, m_error;
};

// What a loader reports: `error` is empty when the table is complete and the version matches.
struct LoadReport {
    std::string file, error;
    bool mismatch = false;
    int version = -1;
};

// The files to try for a library: $`env_var` alone when set, else `soname` as the loader finds
// it and then in `fallback_dir` (the build's CUDA library directory; skipped when empty).
std::vector<std::string> library_candidates(const char* env_var, const std::string& soname,
                                            const std::string& fallback_dir);

// "the cuDNN library F (version V) lacks a, b and c, which NeoMeg calls": the error of a loader
// whose table `missing` entries could not fill.
std::string lacks_entry_points(const char* library, const LoadReport& report,
                               const std::vector<std::string>& missing);

}  // namespace neomeg::dnn::cuda
