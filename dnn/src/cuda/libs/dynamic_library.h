// A shared library opened with dlopen, for the CUDA libraries NeoMeg does not link (libs/*_api.h).
// It is never closed: library handles (a cuDNN handle in a comp node's dnn handle) may be
// destroyed during exit, after any static object.
#pragma once

#include <string>
#include <vector>

#include "neomeg/dnn/errors.h"

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

// The loaders' common frame (load_cublas, load_cudnn, load_cusolver). open_library opens the
// first candidate, or says in `report` that none opened ("cuBLAS could not be loaded (...);
// install cuBLAS 13 or set NEOMEG_CUBLAS_LIBRARY to its path"). After the table is resolved and
// the version checked, finish_load adds the missing entry points' sentence when the version left
// no error, and says whether the table may be handed out.
DynamicLibrary open_library(const char* library, int major, const char* env_var,
                            const std::vector<std::string>& candidates, LoadReport& report);
bool finish_load(const char* library, LoadReport& report, const std::vector<std::string>& missing);
// Records a version mismatch sentence (empty when the versions agree), naming the file.
void set_mismatch(LoadReport& report, std::string sentence);

// The process's table of one library: loaded once, on first use, from
// library_candidates(env_var, soname, fallback_dir), with its report.
template <class Api>
class ProcessLibrary {
public:
    using Loader = Api (*)(const std::vector<std::string>&, LoadReport&);
    ProcessLibrary(Loader load, const char* env_var, const std::string& soname,
                   const std::string& fallback_dir) {
        m_api = load(library_candidates(env_var, soname, fallback_dir), m_report);
    }
    // The table; dnn::Error with the report's sentence when the library is not usable.
    const Api& api() const {
        if (!m_report.error.empty())
            throw Error(m_report.error);
        return m_api;
    }
    const LoadReport& report() const { return m_report; }

private:
    LoadReport m_report;
    Api m_api;
};

}  // namespace neomeg::dnn::cuda
