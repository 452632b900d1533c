# The patcher image: patcher installed from the wheel built from this repository; nothing is
# fetched by the name patcher (the distribution is checkpoint-patcher).
#
#   python3 -m pip wheel --no-deps -w dist .
#   docker build -t patcher:0.1.0 .
#   docker run --rm -v /models:/models patcher:0.1.0 status /models/Kimi-K2.5-NVFP4
FROM python:3.11-slim
COPY dist/checkpoint_patcher-*.whl /tmp/wheels/
RUN python -m pip install --no-cache-dir /tmp/wheels/checkpoint_patcher-*.whl && rm -r /tmp/wheels
ENTRYPOINT ["patcher"]
