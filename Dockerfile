# metacel: one static binary on an empty, non-root image.
# Build: docker build --build-arg VERSION=$(git describe --tags --always) -t metacel .
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd cmd
COPY runtime runtime
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/metacel ./cmd/metacel

# The runtime image holds the binary and CA certificates, nothing else: no shell, no package
# manager. It runs as an unprivileged user (65532, the conventional "nonroot").
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/metacel /metacel
USER 65532:65532
ENTRYPOINT ["/metacel"]
CMD ["run"]
