//! The HTTP (REST) layer, upstream's `apiserver/pkg/endpoints`: what turns requests into store
//! calls and store answers into responses — routing and query parameters, content negotiation
//! (JSON, protobuf bodies, Tables), watch streams, discovery, the OpenAPI documents, and serving
//! it all over HTTPS.
//!
//! ## How a request flows
//!
//! 1. [`handle`] (`dispatch`) takes a request from the in-process `tower::Service` or the
//!    HTTPS server; a held one ([`Faults::hold`](crate::Faults::hold)) waits for its turn.
//! 2. The request is admitted ([`crate::auth`]): its user, the user it impersonates, and the
//!    authorizer's decision on what its path asks; a refusal is a 403 before anything else.
//! 3. The paths that name no resource — discovery, OpenAPI, health — are answered at once
//!    (`non_resource`) and not recorded.
//! 4. A resource request is recorded, its body read (`body`), and it is parsed once
//!    (`request`): the resource its path names, namespace, name and subresource, the answer's
//!    shape its `Accept` asks (`negotiate`), its query (`query`) — and its `Verb`. Every
//!    refusal of a malformed request comes from there.
//! 5. Fault injection has its say, then the request is dispatched on its verb to the handler of
//!    its family: `read` (get, list), `watch`, `write` (create, update, patch),
//!    `delete` (delete, deletecollection), `answer` (the subresources and resources answered
//!    rather than stored, and the kubelet's streams, refused). A dry-run write acts on a
//!    throwaway copy of the store.
//! 6. The answer is written (`response`): JSON as Go writes it, a `Status` for an error,
//!    `Warning` headers (the resource's deprecation on every answer).
//!
//! What a kind does differently is its declaration's ([`ResourceDef`](crate::resource::ResourceDef)):
//! this layer asks no resource by name.
//!
//! | module | what it is |
//! |---|---|
//! | `dispatch` | one request from arrival to answer: hold, record, parse, dispatch on the verb |
//! | `request` | the typed request: resource, namespace, name, subresource, `Verb` |
//! | `call` | one request being answered: what every handler reads and records |
//! | `query` | the query parameters: list, watch, write and delete options |
//! | `negotiate` | `Accept`: the object, a Table or its metadata |
//! | `transform` | an answer turned into the negotiated shape |
//! | `body` | reading and decoding a request body: JSON, YAML, protobuf, size limits |
//! | `response` | JSON answers, `Status` errors, warnings, streams |
//! | `read` | get and list |
//! | `watch` | watch streams: events, bookmarks, streaming lists |
//! | `write` | create, update, patch: write options, field validation, dry runs |
//! | `delete` | delete and deletecollection: options, warnings, the answer |
//! | `answer` | acting subresources, reviews, computed objects, refused streams |
//! | [`server`] | HTTPS with a bearer token, kubeconfig writing |
//! | `non_resource` | the paths that name no resource, in-process and over HTTPS |
//! | [`discovery`] | `/version`, legacy and aggregated discovery, health endpoints |
//! | [`openapi`] | the OpenAPI v2 and v3 documents, every kind's full schema (`kubectl explain`) |
//! | `openapi_custom` | a custom kind's published schema, for each document as apiextensions' builder writes it |
//! | `openapi_proto` | the `/openapi/v2` document as gnostic's protobuf `Document` (what kubectl asks for) |
//! | [`table`] | server-side printing (`as=Table`) for `kubectl get` |
//! | [`printer_columns`] | a custom resource's Table, from its CRD's printer columns |
//! | [`protobuf`] | Kubernetes' protobuf encoding of every built-in kind, both ways, and its watch frames |

mod answer;
mod body;
mod call;
mod connect;
mod delete;
pub mod discovery;
mod dispatch;
mod log;
mod negotiate;
mod non_resource;
pub mod openapi;
mod openapi_custom;
mod openapi_proto;
mod port_forward;
pub mod printer_columns;
pub mod protobuf;
mod query;
mod read;
mod remote_command;
mod request;
mod response;
pub mod server;
mod spdy;
pub mod table;
mod transform;
mod upgrade;
mod watch;
mod websocket;
mod write;

pub use dispatch::handle;
pub use response::{BoxError, Disconnect, ResponseBody, error_response};
pub(crate) use upgrade::Upgrade;
