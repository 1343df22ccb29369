"""The static model: a spec's facts as the sizing runtime's tables (one class per cache kind,
a kind's geometry, quantized layouts, recurrent buffers, the rows each engine reads).
"""
