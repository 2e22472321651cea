// A stand-in for a cuSOLVER of another version (11.7.5, CUDA 12's): only the version query the
// loader asks first, so the loader's mismatch path is tested on any machine.
extern "C" {
// cusolverStatus_t cusolverGetProperty(libraryPropertyType type, int* value): MAJOR_VERSION = 0,
// MINOR_VERSION = 1, PATCH_LEVEL = 2; 0 is CUSOLVER_STATUS_SUCCESS.
int cusolverGetProperty(int type, int* value) {
    static const int kVersion[] = {11, 7, 5};
    if (type < 0 || type > 2)
        return 3;  // CUSOLVER_STATUS_INVALID_VALUE
    *value = kVersion[type];
    return 0;
}
}
