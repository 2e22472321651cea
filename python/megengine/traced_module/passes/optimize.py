def optimize(module, enabled_pass=["FuseConvBn"]):  # noqa: B006 (MegEngine's signature)
    raise NotImplementedError
