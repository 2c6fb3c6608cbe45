//! Errors: [`ApiError`], the OpenAI-shaped error a client sees, and [`ServerError`], what can
//! stop the server itself.
//!
//! Every error response has OpenAI's body, `{"error": {"message", "type", "param", "code"}}`,
//! and the status OpenAI would use, so the official clients raise their usual exceptions
//! (`BadRequestError` for 400, `NotFoundError` for 404, `InternalServerError` for 5xx, …).

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use generate::{GenerateError, ModelError};
use serde_json::{Value, json};

/// An error answered to the client, in OpenAI's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// Human-readable, lowercase.
    pub message: String,
    /// OpenAI's `error.type`: `invalid_request_error` or `server_error`.
    pub kind: &'static str,
    /// The request field the error is about, when there is one.
    pub param: Option<String>,
    /// A machine-readable code, when there is one (`context_length_exceeded`, `queue_full`, …).
    pub code: Option<&'static str>,
}

impl ApiError {
    /// A 400 `invalid_request_error`.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param: None,
            code: None,
        }
    }

    /// A 500 `server_error`.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
            kind: "server_error",
            param: None,
            code: None,
        }
    }

    /// A 503 `server_error`: the queue is full, or the server is shutting down.
    pub fn unavailable(message: impl Into<String>, code: &'static str) -> ApiError {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: message.into(),
            kind: "server_error",
            param: None,
            code: Some(code),
        }
    }

    /// A 401 `invalid_request_error` (`code: "invalid_api_key"`), as OpenAI answers a missing
    /// or wrong API key.
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::invalid(message)
            .status(StatusCode::UNAUTHORIZED)
            .code("invalid_api_key")
    }

    /// A 404 `invalid_request_error`.
    pub fn not_found(message: impl Into<String>, code: Option<&'static str>) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
            kind: "invalid_request_error",
            param: None,
            code,
        }
    }

    /// Sets `param`.
    pub fn param(mut self, param: impl Into<String>) -> ApiError {
        self.param = Some(param.into());
        self
    }

    /// Sets `code`.
    pub fn code(mut self, code: &'static str) -> ApiError {
        self.code = Some(code);
        self
    }

    /// Sets the status.
    pub fn status(mut self, status: StatusCode) -> ApiError {
        self.status = status;
        self
    }

    /// The body: `{"error": {"message", "type", "param", "code"}}`.
    pub fn body(&self) -> Value {
        json!({
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        })
    }

    /// Maps a generation error: what the request got wrong is a 400, the rest a 500.
    pub fn from_generate(e: &GenerateError) -> ApiError {
        match e {
            // The compiler's message names the keyword and its JSON pointer.
            GenerateError::Schema(c) => ApiError::invalid(format!("invalid json schema: {c}"))
                .param("response_format")
                .code("invalid_json_schema"),
            GenerateError::PromptTooLong { prompt, context } => ApiError::invalid(format!(
                "this model's maximum context length is {context} tokens, but the messages \
                 take {prompt} tokens"
            ))
            .param("messages")
            .code("context_length_exceeded"),
            GenerateError::Model(ModelError::ContextOverflow { needed, capacity }) => {
                ApiError::invalid(format!(
                    "this model's maximum context length is {capacity} tokens, but {needed} \
                     tokens were needed"
                ))
                .param("messages")
                .code("context_length_exceeded")
            }
            GenerateError::Template(m) => ApiError::invalid(format!(
                "the messages do not fit the model's chat template: {m}"
            ))
            .param("messages"),
            GenerateError::InvalidTool(m) => {
                let param = if m.starts_with("tool_choice") {
                    "tool_choice"
                } else {
                    "tools"
                };
                ApiError::invalid(e.to_string())
                    .param(param)
                    .code("invalid_tool")
            }
            GenerateError::UnknownTool { .. } => ApiError::invalid(e.to_string())
                .param("tool_choice")
                .code("unknown_tool"),
            // The message names the tool, the keyword and the pointer.
            GenerateError::ToolSchema { .. } => ApiError::invalid(e.to_string())
                .param("tools")
                .code("invalid_json_schema"),
            // The budget ran out inside a call, too small even for its shortest ending.
            GenerateError::ToolCallParse { .. } => ApiError::invalid(format!(
                "max_tokens is too small to finish the tool call ({e})"
            ))
            .param("max_tokens")
            .code("max_tokens_too_small"),
            GenerateError::Sample(s) => ApiError::invalid(s.to_string()),
            GenerateError::Invalid(m) => ApiError::invalid(m.clone()),
            other => ApiError::internal(other.to_string()),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.kind,
            self.message
        )
    }
}

/// Seconds a client is told to wait before retrying a 503 (`Retry-After`).
pub const RETRY_AFTER_SECS: u32 = 1;

impl IntoResponse for ApiError {
    /// The body with the status; a 503 says `Retry-After`, a 401 `WWW-Authenticate: Bearer`.
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        let headers = response.headers_mut();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// What can stop the server: binding the address, loading the model, serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The listening address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The model (or tokenizer) failed to load.
    #[error("cannot load the model: {0}")]
    Load(String),
    /// The model thread could not be started or stopped.
    #[error("model worker: {0}")]
    Worker(String),
    /// Serving failed (the runtime, the listener).
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
}
