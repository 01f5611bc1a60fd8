// The source of the targets that carry the precompiled LibTorch header (cmake/AsvPch.cmake):
// the header is force-included here, so this file needs no content of its own.
