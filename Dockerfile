# toolgate's container image: a static binary, CA certificates and a
# non-root user on an empty base, the state directory a volume.
#
#   docker build -t toolgate --build-arg VERSION=v1.2.3 .
#   docker run --rm toolgate version
#   docker run -p 8787:8787 -v toolgate-state:/var/lib/toolgate toolgate serve --http 0.0.0.0:8787 --tokens ...
#
# CI builds the same image without a daemon (internal/image, go run
# ./internal/image/cmd/toolgate-image); TestDockerfileIsTheImage keeps the
# two in step.

# The build image, by tag. For a reproducible build pin it by digest: look
# the digest up (docker buildx imagetools inspect golang:1.26, or crane
# digest golang:1.26) and build with
#   docker build --build-arg GO_IMAGE=golang:1.26@sha256:DIGEST .
ARG GO_IMAGE=golang:1.26
FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w ${VERSION:+-X github.com/toolgate/toolgate/internal/version.override=${VERSION}}" \
      -o /out/usr/local/bin/toolgate ./cmd/toolgate \
 && mkdir -p /out/etc/ssl/certs /out/var/lib/toolgate /out/tmp \
 && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ca-certificates.crt \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/var/lib/toolgate:/sbin/nologin\n' >/out/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' >/out/etc/group \
 && chown 65532:65532 /out/var/lib/toolgate && chmod 700 /out/var/lib/toolgate && chmod 1777 /out/tmp

FROM scratch
COPY --from=build /out/ /
USER 65532:65532
ENV XDG_STATE_HOME=/var/lib/toolgate
VOLUME ["/var/lib/toolgate"]
EXPOSE 8787
WORKDIR /
ENTRYPOINT ["/usr/local/bin/toolgate"]
CMD ["serve", "--http", "0.0.0.0:8787"]
