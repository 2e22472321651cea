#include "src/cuda/libs/dynamic_library.h"

#include <dlfcn.h>

#include <cstdlib>

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

std::string join_names(const std::vector<std::string>& names) {
    std::string s;
    for (size_t i = 0; i < names.size(); ++i)
        s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return s;
}

}  // namespace neomeg::dnn::cuda
