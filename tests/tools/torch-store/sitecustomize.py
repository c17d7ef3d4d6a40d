"""sitecustomize.py: torch's TCPStore without libuv, for processes started with this folder on PYTHONPATH.

Debian 13's python3-torch (2.6) is built without libuv, yet its TCPStore asks for
libuv by default (torch 2.4 and later): torchrun's rendezvous store, and each
rank's client of it, fail with "use_libuv was requested but PyTorch was build
without libuv support".  USE_LIBUV=0 reaches only init_process_group's own store,
not torchrun's.  This asks every TCPStore for the classic server instead, where
torch knows the option; Debian 12's torch 1.13 has no libuv and no such option,
and is left as it is.  Nothing is imported unless torch is installed.
"""
import importlib.util

if importlib.util.find_spec("torch") is not None:
    import torch.distributed as _dist

    if _dist.is_available() and "use_libuv" in (_dist.TCPStore.__init__.__doc__ or ""):

        class _ClassicTCPStore(_dist.TCPStore):
            def __init__(self, *args, **kwargs):
                kwargs.setdefault("use_libuv", False)
                super().__init__(*args, **kwargs)

        # Every torch.distributed module loaded so far holds its own name for the
        # class (rendezvous.py among them); those loaded later import this one.
        import sys as _sys

        for _name, _module in list(_sys.modules.items()):
            if _name.startswith("torch.distributed") and getattr(_module, "TCPStore", None) is _ClassicTCPStore.__base__:
                _module.TCPStore = _ClassicTCPStore
