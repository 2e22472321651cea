// A stand-in for a cuBLAS of another version (12.9.4): only the version query the loader asks
// first, so the loader's mismatch path is tested on any machine.
extern "C" {
// cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value): MAJOR_VERSION = 0,
// MINOR_VERSION = 1, PATCH_LEVEL = 2; 0 is CUBLAS_STATUS_SUCCESS.
int cublasGetProperty(int type, int* value) {
    static const int kVersion[] = {12, 9, 4};
    if (type < 0 || type > 2)
        return 7;  // CUBLAS_STATUS_INVALID_VALUE
    *value = kVersion[type];
    return 0;
}
}
