// Adds the graph's context to a kernel-library error while keeping its type, so that the layers
// above map it as before (ShapeError -> ValueError, ...).
#pragma once

#include <string>

#include "neomeg/dnn/errors.h"

namespace neomeg::graph {

// Call inside a catch (const dnn::Error&) block.
[[noreturn]] inline void rethrow_with_context(const std::string& context) {
    try {
        throw;
    } catch (const dnn::ShapeError& e) {
        throw dnn::ShapeError(context + e.what());
    } catch (const dnn::DTypeError& e) {
        throw dnn::DTypeError(context + e.what());
    } catch (const dnn::ParamError& e) {
        throw dnn::ParamError(context + e.what());
    } catch (const dnn::IndexError& e) {
        throw dnn::IndexError(context + e.what());
    } catch (const dnn::NotSupportedError& e) {
        throw dnn::NotSupportedError(context + e.what());
    } catch (const dnn::Error& e) {
        throw dnn::Error(context + e.what());
    }
}

}  // namespace neomeg::graph
