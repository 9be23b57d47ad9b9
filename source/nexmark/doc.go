package nexmark
