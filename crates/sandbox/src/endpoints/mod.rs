//! The HTTP layer (upstream's `apiserver/pkg/endpoints`): what turns requests into store calls and store answers into responses —
//! routing and query parameters, content negotiation (JSON, protobuf bodies, Tables), watch
//! streams, discovery, the OpenAPI documents, and serving it all over HTTPS.
//!
//! | module | what it is |
//! |---|---|
//! | [`api`] | resource requests: routing, query parameters, negotiation, watch streams |
//! | [`server`] | HTTPS with a bearer token, kubeconfig writing |
//! | `non_resource` | the paths that name no resource, in-process and over HTTPS |
//! | [`discovery`] | `/version`, legacy and aggregated discovery, health endpoints |
//! | [`openapi`] | the OpenAPI v2 and v3 documents, every kind's full schema (`kubectl explain`) |
//! | `openapi_proto` | the `/openapi/v2` document as gnostic's protobuf `Document` (what kubectl asks for) |
//! | [`table`] | server-side printing (`as=Table`) for `kubectl get` |
//! | [`protobuf`] | reading the protobuf bodies kubectl's `create` sends |

pub mod api;
pub mod discovery;
mod non_resource;
pub mod openapi;
mod openapi_proto;
pub mod printer_columns;
pub mod protobuf;
pub mod server;
pub mod table;
