//! iopath's forwarders: the ASCI Red *fyod* I/O forwarder and the LNET-style router.
//!
//! # Layout
//!
//! Nothing is built here yet. The fyod (PFS and UFS modes, synchronous calls served one at a
//! time, asynchronous calls concurrently) arrives with the end-to-end path; the router
//! personality (forwarding between networks under router-buffer credits) arrives with routed
//! networks. Both ride on [`iopath-fabric`](../iopath_fabric/index.html): the fyod is an RPC
//! service that hands sub-descriptors on, the router is a fabric node with two interfaces.
