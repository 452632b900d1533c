# The patcher image, built from this repository alone: `docker build -t patcher:0.1.0 .` on a
# fresh clone. The first stage builds the wheel (the C scanner needs a compiler, which the full
# python image has); the second installs it into the slim image. Nothing is fetched by the name
# patcher (the distribution is checkpoint-patcher). .dockerignore keeps the context to what the
# wheel is built from.
#
#   docker build -t patcher:0.1.0 .
#   docker run --rm -v /models:/models patcher:0.1.0 status /models/Kimi-K2.5-NVFP4
FROM python:3.11 AS build
WORKDIR /src
COPY . .
RUN python -m pip wheel --no-cache-dir --no-deps -w /dist .

FROM python:3.11-slim
COPY --from=build /dist/ /tmp/wheels/
RUN python -m pip install --no-cache-dir /tmp/wheels/checkpoint_patcher-*.whl && rm -r /tmp/wheels
ENTRYPOINT ["patcher"]
