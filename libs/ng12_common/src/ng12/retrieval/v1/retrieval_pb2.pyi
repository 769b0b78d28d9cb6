from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SearchMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEARCH_MODE_UNSPECIFIED: _ClassVar[SearchMode]
    SEARCH_MODE_ASSESSMENT: _ClassVar[SearchMode]
    SEARCH_MODE_CHAT: _ClassVar[SearchMode]
SEARCH_MODE_UNSPECIFIED: SearchMode
SEARCH_MODE_ASSESSMENT: SearchMode
SEARCH_MODE_CHAT: SearchMode

class GuidelineInfo(_message.Message):
    __slots__ = ("title", "code", "published", "last_updated", "page_count", "source_sha256")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_FIELD_NUMBER: _ClassVar[int]
    LAST_UPDATED_FIELD_NUMBER: _ClassVar[int]
    PAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SHA256_FIELD_NUMBER: _ClassVar[int]
    title: str
    code: str
    published: str
    last_updated: str
    page_count: int
    source_sha256: str
    def __init__(self, title: _Optional[str] = ..., code: _Optional[str] = ..., published: _Optional[str] = ..., last_updated: _Optional[str] = ..., page_count: _Optional[int] = ..., source_sha256: _Optional[str] = ...) -> None: ...

class PatientProfile(_message.Message):
    __slots__ = ("age", "sex", "smoking", "symptoms")
    AGE_FIELD_NUMBER: _ClassVar[int]
    SEX_FIELD_NUMBER: _ClassVar[int]
    SMOKING_FIELD_NUMBER: _ClassVar[int]
    SYMPTOMS_FIELD_NUMBER: _ClassVar[int]
    age: int
    sex: str
    smoking: str
    symptoms: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, age: _Optional[int] = ..., sex: _Optional[str] = ..., smoking: _Optional[str] = ..., symptoms: _Optional[_Iterable[str]] = ...) -> None: ...

class SearchFilters(_message.Message):
    __slots__ = ("doc_types", "sections", "recommendation_ids")
    DOC_TYPES_FIELD_NUMBER: _ClassVar[int]
    SECTIONS_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATION_IDS_FIELD_NUMBER: _ClassVar[int]
    doc_types: _containers.RepeatedScalarFieldContainer[str]
    sections: _containers.RepeatedScalarFieldContainer[str]
    recommendation_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, doc_types: _Optional[_Iterable[str]] = ..., sections: _Optional[_Iterable[str]] = ..., recommendation_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("query", "top_k", "mode", "patient", "filters", "include_metadata")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    PATIENT_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_METADATA_FIELD_NUMBER: _ClassVar[int]
    query: str
    top_k: int
    mode: SearchMode
    patient: PatientProfile
    filters: SearchFilters
    include_metadata: bool
    def __init__(self, query: _Optional[str] = ..., top_k: _Optional[int] = ..., mode: _Optional[_Union[SearchMode, str]] = ..., patient: _Optional[_Union[PatientProfile, _Mapping]] = ..., filters: _Optional[_Union[SearchFilters, _Mapping]] = ..., include_metadata: _Optional[bool] = ...) -> None: ...

class Boost(_message.Message):
    __slots__ = ("name", "value", "reason")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: float
    reason: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[float] = ..., reason: _Optional[str] = ...) -> None: ...

class CanonicalRecommendation(_message.Message):
    __slots__ = ("id", "section", "section_title", "cancer_site", "page", "page_end", "text", "action", "strength", "timeframe", "metadata")
    ID_FIELD_NUMBER: _ClassVar[int]
    SECTION_FIELD_NUMBER: _ClassVar[int]
    SECTION_TITLE_FIELD_NUMBER: _ClassVar[int]
    CANCER_SITE_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    PAGE_END_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    STRENGTH_FIELD_NUMBER: _ClassVar[int]
    TIMEFRAME_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    id: str
    section: str
    section_title: str
    cancer_site: str
    page: int
    page_end: int
    text: str
    action: str
    strength: str
    timeframe: str
    metadata: _struct_pb2.Struct
    def __init__(self, id: _Optional[str] = ..., section: _Optional[str] = ..., section_title: _Optional[str] = ..., cancer_site: _Optional[str] = ..., page: _Optional[int] = ..., page_end: _Optional[int] = ..., text: _Optional[str] = ..., action: _Optional[str] = ..., strength: _Optional[str] = ..., timeframe: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class Hit(_message.Message):
    __slots__ = ("chunk_id", "doc_type", "score", "text", "page", "section", "recommendation_ids", "canonical", "boosts", "dense_score", "lexical_score", "metadata", "supporting")
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    DOC_TYPE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SECTION_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATION_IDS_FIELD_NUMBER: _ClassVar[int]
    CANONICAL_FIELD_NUMBER: _ClassVar[int]
    BOOSTS_FIELD_NUMBER: _ClassVar[int]
    DENSE_SCORE_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_SCORE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SUPPORTING_FIELD_NUMBER: _ClassVar[int]
    chunk_id: str
    doc_type: str
    score: float
    text: str
    page: int
    section: str
    recommendation_ids: _containers.RepeatedScalarFieldContainer[str]
    canonical: _containers.RepeatedCompositeFieldContainer[CanonicalRecommendation]
    boosts: _containers.RepeatedCompositeFieldContainer[Boost]
    dense_score: float
    lexical_score: float
    metadata: _struct_pb2.Struct
    supporting: _containers.RepeatedCompositeFieldContainer[SupportingPassage]
    def __init__(self, chunk_id: _Optional[str] = ..., doc_type: _Optional[str] = ..., score: _Optional[float] = ..., text: _Optional[str] = ..., page: _Optional[int] = ..., section: _Optional[str] = ..., recommendation_ids: _Optional[_Iterable[str]] = ..., canonical: _Optional[_Iterable[_Union[CanonicalRecommendation, _Mapping]]] = ..., boosts: _Optional[_Iterable[_Union[Boost, _Mapping]]] = ..., dense_score: _Optional[float] = ..., lexical_score: _Optional[float] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., supporting: _Optional[_Iterable[_Union[SupportingPassage, _Mapping]]] = ...) -> None: ...

class SupportingPassage(_message.Message):
    __slots__ = ("chunk_id", "doc_type", "score", "page", "section", "text")
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    DOC_TYPE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SECTION_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    chunk_id: str
    doc_type: str
    score: float
    page: int
    section: str
    text: str
    def __init__(self, chunk_id: _Optional[str] = ..., doc_type: _Optional[str] = ..., score: _Optional[float] = ..., page: _Optional[int] = ..., section: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class SearchResponse(_message.Message):
    __slots__ = ("hits", "index_version", "guideline", "normalized_query", "degraded", "degraded_reason")
    HITS_FIELD_NUMBER: _ClassVar[int]
    INDEX_VERSION_FIELD_NUMBER: _ClassVar[int]
    GUIDELINE_FIELD_NUMBER: _ClassVar[int]
    NORMALIZED_QUERY_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_REASON_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[Hit]
    index_version: str
    guideline: GuidelineInfo
    normalized_query: str
    degraded: bool
    degraded_reason: str
    def __init__(self, hits: _Optional[_Iterable[_Union[Hit, _Mapping]]] = ..., index_version: _Optional[str] = ..., guideline: _Optional[_Union[GuidelineInfo, _Mapping]] = ..., normalized_query: _Optional[str] = ..., degraded: _Optional[bool] = ..., degraded_reason: _Optional[str] = ...) -> None: ...

class GetRecommendationsRequest(_message.Message):
    __slots__ = ("ids", "version")
    IDS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    version: str
    def __init__(self, ids: _Optional[_Iterable[str]] = ..., version: _Optional[str] = ...) -> None: ...

class GetRecommendationsResponse(_message.Message):
    __slots__ = ("recommendations", "index_version", "guideline")
    RECOMMENDATIONS_FIELD_NUMBER: _ClassVar[int]
    INDEX_VERSION_FIELD_NUMBER: _ClassVar[int]
    GUIDELINE_FIELD_NUMBER: _ClassVar[int]
    recommendations: _containers.RepeatedCompositeFieldContainer[CanonicalRecommendation]
    index_version: str
    guideline: GuidelineInfo
    def __init__(self, recommendations: _Optional[_Iterable[_Union[CanonicalRecommendation, _Mapping]]] = ..., index_version: _Optional[str] = ..., guideline: _Optional[_Union[GuidelineInfo, _Mapping]] = ...) -> None: ...

class Chunk(_message.Message):
    __slots__ = ("id", "doc_type", "text", "page", "section", "recommendation_ids", "metadata")
    ID_FIELD_NUMBER: _ClassVar[int]
    DOC_TYPE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SECTION_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATION_IDS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    id: str
    doc_type: str
    text: str
    page: int
    section: str
    recommendation_ids: _containers.RepeatedScalarFieldContainer[str]
    metadata: _struct_pb2.Struct
    def __init__(self, id: _Optional[str] = ..., doc_type: _Optional[str] = ..., text: _Optional[str] = ..., page: _Optional[int] = ..., section: _Optional[str] = ..., recommendation_ids: _Optional[_Iterable[str]] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class IndexVersion(_message.Message):
    __slots__ = ("version", "status", "guideline", "embedder_id", "embedding_dim", "chunk_counts", "expected_counts", "recommendation_count", "created_at", "activated_at", "error", "description", "stale_criteria", "unused_criteria", "has_source_pdf", "source_filename")
    class ChunkCountsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class ExpectedCountsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    VERSION_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    GUIDELINE_FIELD_NUMBER: _ClassVar[int]
    EMBEDDER_ID_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_DIM_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNTS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_COUNTS_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATION_COUNT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTIVATED_AT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    STALE_CRITERIA_FIELD_NUMBER: _ClassVar[int]
    UNUSED_CRITERIA_FIELD_NUMBER: _ClassVar[int]
    HAS_SOURCE_PDF_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILENAME_FIELD_NUMBER: _ClassVar[int]
    version: str
    status: str
    guideline: GuidelineInfo
    embedder_id: str
    embedding_dim: int
    chunk_counts: _containers.ScalarMap[str, int]
    expected_counts: _containers.ScalarMap[str, int]
    recommendation_count: int
    created_at: str
    activated_at: str
    error: str
    description: str
    stale_criteria: _containers.RepeatedScalarFieldContainer[str]
    unused_criteria: _containers.RepeatedScalarFieldContainer[str]
    has_source_pdf: bool
    source_filename: str
    def __init__(self, version: _Optional[str] = ..., status: _Optional[str] = ..., guideline: _Optional[_Union[GuidelineInfo, _Mapping]] = ..., embedder_id: _Optional[str] = ..., embedding_dim: _Optional[int] = ..., chunk_counts: _Optional[_Mapping[str, int]] = ..., expected_counts: _Optional[_Mapping[str, int]] = ..., recommendation_count: _Optional[int] = ..., created_at: _Optional[str] = ..., activated_at: _Optional[str] = ..., error: _Optional[str] = ..., description: _Optional[str] = ..., stale_criteria: _Optional[_Iterable[str]] = ..., unused_criteria: _Optional[_Iterable[str]] = ..., has_source_pdf: _Optional[bool] = ..., source_filename: _Optional[str] = ...) -> None: ...

class BeginIndexRequest(_message.Message):
    __slots__ = ("guideline", "expected_counts", "description", "stale_criteria", "unused_criteria", "source_filename")
    class ExpectedCountsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    GUIDELINE_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_COUNTS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    STALE_CRITERIA_FIELD_NUMBER: _ClassVar[int]
    UNUSED_CRITERIA_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILENAME_FIELD_NUMBER: _ClassVar[int]
    guideline: GuidelineInfo
    expected_counts: _containers.ScalarMap[str, int]
    description: str
    stale_criteria: _containers.RepeatedScalarFieldContainer[str]
    unused_criteria: _containers.RepeatedScalarFieldContainer[str]
    source_filename: str
    def __init__(self, guideline: _Optional[_Union[GuidelineInfo, _Mapping]] = ..., expected_counts: _Optional[_Mapping[str, int]] = ..., description: _Optional[str] = ..., stale_criteria: _Optional[_Iterable[str]] = ..., unused_criteria: _Optional[_Iterable[str]] = ..., source_filename: _Optional[str] = ...) -> None: ...

class LexiconTerm(_message.Message):
    __slots__ = ("concept", "label", "synonyms", "kind", "terms")
    CONCEPT_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    SYNONYMS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TERMS_FIELD_NUMBER: _ClassVar[int]
    concept: str
    label: str
    synonyms: _containers.RepeatedScalarFieldContainer[str]
    kind: str
    terms: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, concept: _Optional[str] = ..., label: _Optional[str] = ..., synonyms: _Optional[_Iterable[str]] = ..., kind: _Optional[str] = ..., terms: _Optional[_Iterable[str]] = ...) -> None: ...

class UploadChunksRequest(_message.Message):
    __slots__ = ("version", "chunks", "recommendations", "lexicon", "last")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATIONS_FIELD_NUMBER: _ClassVar[int]
    LEXICON_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    version: str
    chunks: _containers.RepeatedCompositeFieldContainer[Chunk]
    recommendations: _containers.RepeatedCompositeFieldContainer[CanonicalRecommendation]
    lexicon: _containers.RepeatedCompositeFieldContainer[LexiconTerm]
    last: bool
    def __init__(self, version: _Optional[str] = ..., chunks: _Optional[_Iterable[_Union[Chunk, _Mapping]]] = ..., recommendations: _Optional[_Iterable[_Union[CanonicalRecommendation, _Mapping]]] = ..., lexicon: _Optional[_Iterable[_Union[LexiconTerm, _Mapping]]] = ..., last: _Optional[bool] = ...) -> None: ...

class UploadChunksResponse(_message.Message):
    __slots__ = ("version", "chunks_received", "recommendations_received")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATIONS_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    version: str
    chunks_received: int
    recommendations_received: int
    def __init__(self, version: _Optional[str] = ..., chunks_received: _Optional[int] = ..., recommendations_received: _Optional[int] = ...) -> None: ...

class FinishIndexRequest(_message.Message):
    __slots__ = ("version",)
    VERSION_FIELD_NUMBER: _ClassVar[int]
    version: str
    def __init__(self, version: _Optional[str] = ...) -> None: ...

class FinishIndexResponse(_message.Message):
    __slots__ = ("version", "valid", "problems")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    VALID_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    version: IndexVersion
    valid: bool
    problems: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, version: _Optional[_Union[IndexVersion, _Mapping]] = ..., valid: _Optional[bool] = ..., problems: _Optional[_Iterable[str]] = ...) -> None: ...

class AbortIndexRequest(_message.Message):
    __slots__ = ("version", "reason")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    version: str
    reason: str
    def __init__(self, version: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ActivateIndexRequest(_message.Message):
    __slots__ = ("version",)
    VERSION_FIELD_NUMBER: _ClassVar[int]
    version: str
    def __init__(self, version: _Optional[str] = ...) -> None: ...

class RollbackIndexRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListIndexVersionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListIndexVersionsResponse(_message.Message):
    __slots__ = ("versions", "active_version")
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_VERSION_FIELD_NUMBER: _ClassVar[int]
    versions: _containers.RepeatedCompositeFieldContainer[IndexVersion]
    active_version: str
    def __init__(self, versions: _Optional[_Iterable[_Union[IndexVersion, _Mapping]]] = ..., active_version: _Optional[str] = ...) -> None: ...

class GetActiveIndexRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetLexiconRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetLexiconResponse(_message.Message):
    __slots__ = ("terms", "index_version")
    TERMS_FIELD_NUMBER: _ClassVar[int]
    INDEX_VERSION_FIELD_NUMBER: _ClassVar[int]
    terms: _containers.RepeatedCompositeFieldContainer[LexiconTerm]
    index_version: str
    def __init__(self, terms: _Optional[_Iterable[_Union[LexiconTerm, _Mapping]]] = ..., index_version: _Optional[str] = ...) -> None: ...

class EmbedRequest(_message.Message):
    __slots__ = ("texts", "as_query")
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    AS_QUERY_FIELD_NUMBER: _ClassVar[int]
    texts: _containers.RepeatedScalarFieldContainer[str]
    as_query: bool
    def __init__(self, texts: _Optional[_Iterable[str]] = ..., as_query: _Optional[bool] = ...) -> None: ...

class Embedding(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ...) -> None: ...

class EmbedResponse(_message.Message):
    __slots__ = ("embeddings", "embedder_id", "dimension", "index_version")
    EMBEDDINGS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDER_ID_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    INDEX_VERSION_FIELD_NUMBER: _ClassVar[int]
    embeddings: _containers.RepeatedCompositeFieldContainer[Embedding]
    embedder_id: str
    dimension: int
    index_version: str
    def __init__(self, embeddings: _Optional[_Iterable[_Union[Embedding, _Mapping]]] = ..., embedder_id: _Optional[str] = ..., dimension: _Optional[int] = ..., index_version: _Optional[str] = ...) -> None: ...

class UploadSourceRequest(_message.Message):
    __slots__ = ("version", "data", "last")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    version: str
    data: bytes
    last: bool
    def __init__(self, version: _Optional[str] = ..., data: _Optional[bytes] = ..., last: _Optional[bool] = ...) -> None: ...

class UploadSourceResponse(_message.Message):
    __slots__ = ("version", "size", "sha256")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    version: str
    size: int
    sha256: str
    def __init__(self, version: _Optional[str] = ..., size: _Optional[int] = ..., sha256: _Optional[str] = ...) -> None: ...

class RenderPageRequest(_message.Message):
    __slots__ = ("version", "page", "highlight_id", "scale")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    HIGHLIGHT_ID_FIELD_NUMBER: _ClassVar[int]
    SCALE_FIELD_NUMBER: _ClassVar[int]
    version: str
    page: int
    highlight_id: str
    scale: float
    def __init__(self, version: _Optional[str] = ..., page: _Optional[int] = ..., highlight_id: _Optional[str] = ..., scale: _Optional[float] = ...) -> None: ...

class RenderPageResponse(_message.Message):
    __slots__ = ("png", "index_version", "page_count", "etag", "boxes")
    PNG_FIELD_NUMBER: _ClassVar[int]
    INDEX_VERSION_FIELD_NUMBER: _ClassVar[int]
    PAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    BOXES_FIELD_NUMBER: _ClassVar[int]
    png: bytes
    index_version: str
    page_count: int
    etag: str
    boxes: int
    def __init__(self, png: _Optional[bytes] = ..., index_version: _Optional[str] = ..., page_count: _Optional[int] = ..., etag: _Optional[str] = ..., boxes: _Optional[int] = ...) -> None: ...

class ListChunksRequest(_message.Message):
    __slots__ = ("version", "doc_type", "section", "q", "offset", "limit")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DOC_TYPE_FIELD_NUMBER: _ClassVar[int]
    SECTION_FIELD_NUMBER: _ClassVar[int]
    Q_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    version: str
    doc_type: str
    section: str
    q: str
    offset: int
    limit: int
    def __init__(self, version: _Optional[str] = ..., doc_type: _Optional[str] = ..., section: _Optional[str] = ..., q: _Optional[str] = ..., offset: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ChunkSummary(_message.Message):
    __slots__ = ("chunk_id", "doc_type", "section", "recommendation_ids", "page", "text", "metadata")
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    DOC_TYPE_FIELD_NUMBER: _ClassVar[int]
    SECTION_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATION_IDS_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    chunk_id: str
    doc_type: str
    section: str
    recommendation_ids: _containers.RepeatedScalarFieldContainer[str]
    page: int
    text: str
    metadata: _struct_pb2.Struct
    def __init__(self, chunk_id: _Optional[str] = ..., doc_type: _Optional[str] = ..., section: _Optional[str] = ..., recommendation_ids: _Optional[_Iterable[str]] = ..., page: _Optional[int] = ..., text: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ListChunksResponse(_message.Message):
    __slots__ = ("total", "counts_by_type", "items", "index_version")
    class CountsByTypeEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    COUNTS_BY_TYPE_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    INDEX_VERSION_FIELD_NUMBER: _ClassVar[int]
    total: int
    counts_by_type: _containers.ScalarMap[str, int]
    items: _containers.RepeatedCompositeFieldContainer[ChunkSummary]
    index_version: str
    def __init__(self, total: _Optional[int] = ..., counts_by_type: _Optional[_Mapping[str, int]] = ..., items: _Optional[_Iterable[_Union[ChunkSummary, _Mapping]]] = ..., index_version: _Optional[str] = ...) -> None: ...

class GetChunkRequest(_message.Message):
    __slots__ = ("version", "chunk_id")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    version: str
    chunk_id: str
    def __init__(self, version: _Optional[str] = ..., chunk_id: _Optional[str] = ...) -> None: ...

class GetChunkResponse(_message.Message):
    __slots__ = ("chunk", "recommendation", "index_version")
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATION_FIELD_NUMBER: _ClassVar[int]
    INDEX_VERSION_FIELD_NUMBER: _ClassVar[int]
    chunk: ChunkSummary
    recommendation: CanonicalRecommendation
    index_version: str
    def __init__(self, chunk: _Optional[_Union[ChunkSummary, _Mapping]] = ..., recommendation: _Optional[_Union[CanonicalRecommendation, _Mapping]] = ..., index_version: _Optional[str] = ...) -> None: ...
