"""The ACL core: bindings as values (model.py) and the authorization decision (authorizer.py).

Pure, like every `core` package (tests/unit/test_core_purity.py): the store adapter
(acls/store.py) reads ZooKeeper and hands the bindings in; the gRPC edge (acls/enforcement.py)
asks the questions.
"""
