#include "src/cuda/libs/dynamic_library.h"

#include <dlfcn.h>

#include <cstdlib>

#include "neomeg/dnn/cuda_libraries.h"
#include "neomeg/dnn/errors.h"

namespace neomeg::dnn::cuda {

DynamicLibrary DynamicLibrary::open(const std::vector<std::string>& candidates) {
    DynamicLibrary lib;
    for (const auto& file : candidates) {
        if (void* h = dlopen(file.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
            lib.m_handle = h;
            lib.m_file = file;
            lib.m_error.clear();
            return lib;
        }
        const char* why = dlerror();
        lib.m_error += (lib.m_error.empty() ? "" : "; ") + (why ? std::string(why) : file);
    }
    if (candidates.empty())
        lib.m_error = "no file to load";
    return lib;
}

void* DynamicLibrary::symbol(const char* name) const {
    return m_handle ? dlsym(m_handle, name) : nullptr;
}

std::vector<std::string> library_candidates(const char* env_var, const std::string& soname,
                                            const std::string& fallback_dir) {
    if (const char* v = std::getenv(env_var); v && *v)
        return {v};
    std::vector<std::string> files{soname};
    if (!fallback_dir.empty())
        files.push_back(fallback_dir + "/" + soname);
    return files;
}

std::string lacks_entry_points(const char* library, const LoadReport& report,
                               const std::vector<std::string>& missing) {
    std::string names;
    for (size_t i = 0; i < missing.size(); ++i)
        names += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + missing[i];
    return str_cat("the ", library, " library ", report.file,
                   report.version > 0 ? str_cat(" (version ",
                                                cuda_libraries::version_string(report.version), ")")
                                      : "",
                   " lacks ", names, ", which NeoMeg calls");
}

DynamicLibrary open_library(const char* library, int major, const char* env_var,
                            const std::vector<std::string>& candidates, LoadReport& report) {
    report = {};
    auto lib = DynamicLibrary::open(candidates);
    if (lib.ok())
        report.file = lib.file();
    else
        report.error = str_cat(library, " could not be loaded (", lib.error(), "); install ",
                               library, " ", major, " or set ", env_var, " to its path");
    return lib;
}

void set_mismatch(LoadReport& report, std::string sentence) {
    report.mismatch = !sentence.empty();
    report.error = std::move(sentence);
    if (report.mismatch)
        report.error += str_cat(" (", report.file, ")");
}

bool finish_load(const char* library, LoadReport& report, const std::vector<std::string>& missing) {
    // The version first (the caller checked it): a library of another major version lacks entry
    // points too, and the versions say more than the names.
    if (report.error.empty() && !missing.empty())
        report.error = lacks_entry_points(library, report, missing);
    return report.error.empty();
}

}  // namespace neomeg::dnn::cuda
