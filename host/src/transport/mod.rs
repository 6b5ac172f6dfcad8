//! How messages reach the server: Streamable HTTP and stdio.

pub mod http;
pub mod stdio;
