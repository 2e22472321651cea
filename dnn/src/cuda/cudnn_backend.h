// One cuDNN backend (graph API) descriptor as an RAII object over a CudnnApi table, so that the
// graph code runs on the process's cuDNN and, in the host tests, on a stand-in table. Setting
// attributes chains; the first failing call is kept (status(), what()) and later ones do nothing,
// so a builder reads as the list of attributes it sets and checks once at the end.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "src/cuda/libs/cudnn_api.h"

namespace neomeg::dnn::cuda {

class BackendDesc {
public:
    BackendDesc() = default;
    BackendDesc(const CudnnApi& api, cudnnBackendDescriptorType_t type) : m_api(&api) {
        m_status = api.cudnnBackendCreateDescriptor(type, &m_desc);
        if (m_status != CUDNN_STATUS_SUCCESS) {
            m_desc = nullptr;
            m_failed = "cudnnBackendCreateDescriptor";
        }
    }
    ~BackendDesc() { reset(); }
    BackendDesc(BackendDesc&& o) noexcept { *this = std::move(o); }
    BackendDesc& operator=(BackendDesc&& o) noexcept {
        if (this != &o) {
            reset();
            m_api = o.m_api;
            m_desc = std::exchange(o.m_desc, nullptr);
            m_status = o.m_status;
            m_failed = o.m_failed;
        }
        return *this;
    }
    BackendDesc(const BackendDesc&) = delete;
    BackendDesc& operator=(const BackendDesc&) = delete;

    cudnnBackendDescriptor_t get() const { return m_desc; }
    // Hands the descriptor over (the caller destroys it).
    cudnnBackendDescriptor_t release() { return std::exchange(m_desc, nullptr); }
    bool ok() const { return m_status == CUDNN_STATUS_SUCCESS; }
    cudnnStatus_t status() const { return m_status; }
    // "cudnnBackendFinalize failed (CUDNN_STATUS_NOT_SUPPORTED)", or "" while ok().
    std::string what() const {
        if (ok())
            return "";
        const char* s = m_api && m_api->cudnnGetErrorString ? m_api->cudnnGetErrorString(m_status)
                                                            : nullptr;
        return str_cat(m_failed, " failed (", s ? s : "status ", s ? "" : str_cat(m_status), ")");
    }

    BackendDesc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                     int64_t count, const void* values) {
        if (ok())
            check(m_api->cudnnBackendSetAttribute(m_desc, name, type, count, values),
                  "cudnnBackendSetAttribute");
        return *this;
    }
    BackendDesc& set(cudnnBackendAttributeName_t name, std::span<const int64_t> v) {
        return set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(v.size()), v.data());
    }
    BackendDesc& set(cudnnBackendAttributeName_t name, int64_t v) {
        return set(name, CUDNN_TYPE_INT64, 1, &v);
    }
    BackendDesc& set(cudnnBackendAttributeName_t name, const BackendDesc& d) {
        cudnnBackendDescriptor_t p = d.get();
        return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p);
    }
    BackendDesc& finalize() {
        if (ok())
            check(m_api->cudnnBackendFinalize(m_desc), "cudnnBackendFinalize");
        return *this;
    }
    // Reads an attribute into `values` (capacity `capacity`); the count cuDNN reports, or -1 after
    // a failure.
    int64_t get(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                int64_t capacity, void* values) {
        int64_t n = 0;
        if (ok())
            check(m_api->cudnnBackendGetAttribute(m_desc, name, type, capacity, &n, values),
                  "cudnnBackendGetAttribute");
        return ok() ? n : -1;
    }

private:
    void check(cudnnStatus_t st, const char* call) {
        m_status = st;
        if (st != CUDNN_STATUS_SUCCESS)
            m_failed = call;
    }
    void reset() {
        if (m_desc)
            m_api->cudnnBackendDestroyDescriptor(m_desc);
        m_desc = nullptr;
    }

    const CudnnApi* m_api = nullptr;
    cudnnBackendDescriptor_t m_desc = nullptr;
    cudnnStatus_t m_status = CUDNN_STATUS_SUCCESS;
    const char* m_failed = "";
};

}  // namespace neomeg::dnn::cuda
