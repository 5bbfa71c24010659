import GGUF

// Scalar reference decoders, one per block format: the oracle every fast path is tested
// against, and bit-exact with gguf-py's `gguf.quants.dequantize` (same operations, same order,
// float32 throughout, no fused multiply-add).
//
// Each decodes one block at `block` into `type.blockSize` floats at `output`. Layouts are
// ggml's block structs (ggml-common.h); all multi-byte fields are little-endian. "d" is the
// block scale, "m"/"dmin" the block minimum, both IEEE half precision unless noted.

@inline(__always)
func _half(_ block: UnsafeRawPointer, _ offset: Int) -> Float {
    _halfToFloat[Int(UInt16(littleEndian: block.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))]
}

/// `floatFromHalf` for all 65,536 patterns (256 KiB), filled once: one load per block scale
/// instead of a dozen branchy instructions.
nonisolated(unsafe) let _halfToFloat: UnsafePointer<Float> = {
    let table = UnsafeMutablePointer<Float>.allocate(capacity: 65_536)
    for bits in 0 ... 65_535 { table[bits] = floatFromHalf(UInt16(bits)) }
    return UnsafePointer(table)
}()

@inline(__always)
func _byte(_ block: UnsafeRawPointer, _ offset: Int) -> UInt8 {
    block.load(fromByteOffset: offset, as: UInt8.self)
}

// MARK: - 32-element blocks

/// Q4_0 (``BlockLayout/Q4_0``): `d` | 16 bytes of nibbles.
/// Element `j` (0..<16) is the low nibble of byte `j`, element `j + 16` its high nibble;
/// value = d × (nibble − 8).
func _dequantizeQ4_0Reference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    let d = _half(block, BlockLayout.Q4_0.scale)
    for j in 0..<16 {
        let byte = _byte(block, BlockLayout.Q4_0.codes + j)
        output[j] = d * Float(Int(byte & 0x0F) - 8)
        output[j + 16] = d * Float(Int(byte >> 4) - 8)
    }
}

/// Q4_1 (``BlockLayout/Q4_1``): `d` | `m` | 16 bytes of nibbles (ordered as Q4_0);
/// value = d × nibble + m.
func _dequantizeQ4_1Reference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    let d = _half(block, BlockLayout.Q4_1.scale), m = _half(block, BlockLayout.Q4_1.minimum)
    for j in 0..<16 {
        let byte = _byte(block, BlockLayout.Q4_1.codes + j)
        output[j] = d * Float(byte & 0x0F) + m
        output[j + 16] = d * Float(byte >> 4) + m
    }
}

/// Q5_0 (``BlockLayout/Q5_0``): `d` | `qh` (u32: bit `i` is the fifth bit of element `i`) | 16 bytes
/// of nibbles (ordered as Q4_0); value = d × (nibble | fifth bit << 4 − 16).
func _dequantizeQ5_0Reference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    let d = _half(block, BlockLayout.Q5_0.scale)
    let high = UInt32(littleEndian: block.loadUnaligned(fromByteOffset: BlockLayout.Q5_0.fifthBits, as: UInt32.self))
    for j in 0..<16 {
        let byte = _byte(block, BlockLayout.Q5_0.codes + j)
        let low = Int(byte & 0x0F) | Int((high >> UInt32(j)) & 1) << 4
        let upper = Int(byte >> 4) | Int((high >> UInt32(j + 16)) & 1) << 4
        output[j] = d * Float(low - 16)
        output[j + 16] = d * Float(upper - 16)
    }
}

/// Q5_1 (``BlockLayout/Q5_1``): `d` | `m` | `qh` (u32) | 16 bytes of nibbles;
/// value = d × (nibble | fifth bit << 4) + m.
func _dequantizeQ5_1Reference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    let d = _half(block, BlockLayout.Q5_1.scale), m = _half(block, BlockLayout.Q5_1.minimum)
    let high = UInt32(littleEndian: block.loadUnaligned(fromByteOffset: BlockLayout.Q5_1.fifthBits, as: UInt32.self))
    for j in 0..<16 {
        let byte = _byte(block, BlockLayout.Q5_1.codes + j)
        let low = UInt32(byte & 0x0F) | ((high >> UInt32(j)) & 1) << 4
        let upper = UInt32(byte >> 4) | ((high >> UInt32(j + 16)) & 1) << 4
        output[j] = d * Float(low) + m
        output[j + 16] = d * Float(upper) + m
    }
}

/// Q8_0 (``BlockLayout/Q8_0``): `d` | 32 × int8; value = int8 × d.
func _dequantizeQ8_0Reference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    let d = _half(block, BlockLayout.Q8_0.scale)
    for j in 0..<32 {
        output[j] = Float(block.load(fromByteOffset: BlockLayout.Q8_0.codes + j, as: Int8.self)) * d
    }
}

/// ½ × 2^(e − 127) for an E8M0 exponent byte `e` (ggml's `GGML_E8M0_TO_FP32_HALF`): exact
/// for every byte, subnormal for 0 and 1 (2^−128, 2^−127), 2^126 for 254 and 2^127 for 255.
@inline(__always)
func _halfOfExponentScale(_ e: UInt8) -> Float {
    Float(bitPattern: e < 2 ? UInt32(0x0020_0000) << UInt32(e) : UInt32(e &- 1) << 23)
}

/// MXFP4 (``BlockLayout/MXFP4``): `e` | 16 bytes of nibbles (ordered as Q4_0);
/// value = ½ × 2^(e − 127) × doubled E2M1 value of the nibble. Byte 255 with a code of 8 or 12
/// overflows to ±infinity, as in gguf-py and ggml.
func _dequantizeMXFP4Reference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    let d = _halfOfExponentScale(_byte(block, BlockLayout.MXFP4.exponent))
    BlockLayout.MXFP4.values.withUnsafeBufferPointer { values in
        for j in 0..<16 {
            let byte = _byte(block, BlockLayout.MXFP4.codes + j)
            output[j] = d * Float(values[Int(byte & 0x0F)])
            output[j + 16] = d * Float(values[Int(byte >> 4)])
        }
    }
}

// MARK: - 256-element "K" super-blocks

/// Q2_K (``BlockLayout/Q2_K``): 16 scale bytes (low nibble: scale, high nibble: minimum, one pair per 16
/// elements) | 64 bytes of 2-bit quants | `d` (f16) | `dmin` (f16).
/// Element `128h + 32s + l` is bits `2s…2s+1` of quant byte `32h + l`;
/// value = (d × scale) × q − (dmin × min) for its group of 16.
func _dequantizeQ2_KReference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    let d = _half(block, BlockLayout.Q2_K.scale), dmin = _half(block, BlockLayout.Q2_K.minimumScale)
    for index in 0..<256 {
        let half = index / 128, shift = (index % 128) / 32, lane = index % 32
        let q = (_byte(block, BlockLayout.Q2_K.codes + 32 * half + lane) >> UInt8(2 * shift)) & 3
        let scale = _byte(block, BlockLayout.Q2_K.scales + index / 16)
        let dl = d * Float(scale & 0x0F)
        let ml = dmin * Float(scale >> 4)
        output[index] = dl * Float(q) - ml
    }
}

/// Q3_K (``BlockLayout/Q3_K``): 32 bytes high-bit mask | 64 bytes of 2-bit quants | 12 bytes of sixteen
/// 6-bit signed scales | `d` (f16).
/// Element `128h + 32s + l`: low bits are bits `2s…2s+1` of quant byte `32h + l`; its high bit
/// is bit `(index / 32)` of mask byte `l`, and subtracts 4 when it is *clear*.
/// Scale `i` (per 16 elements): low 4 bits from byte `i % 8` (nibble `i / 8`), high 2 bits from
/// byte `8 + i % 4` (bits `2(i / 4)…`); scale − 32. Value = (d × scale) × q.
func _dequantizeQ3_KReference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    let d = _half(block, BlockLayout.Q3_K.scale)
    let scales = block + BlockLayout.Q3_K.scales
    for index in 0..<256 {
        let group = index / 16
        let low = (_byte(scales, group % 8) >> UInt8(4 * (group / 8))) & 0x0F
        let high = (_byte(scales, 8 + group % 4) >> UInt8(2 * (group / 4))) & 0x03
        let scale = Int(Int8(bitPattern: low | high << 4)) - 32
        let dl = d * Float(scale)
        let half = index / 128, shift = (index % 128) / 32, lane = index % 32
        let q2 = Int((_byte(block, BlockLayout.Q3_K.codes + 32 * half + lane) >> UInt8(2 * shift)) & 3)
        let maskBit = Int((_byte(block, BlockLayout.Q3_K.highBits + lane) >> UInt8(index / 32)) & 1)
        output[index] = dl * Float(q2 - ((maskBit ^ 1) << 2))
    }
}

/// The eight 6-bit scales and minimums of Q4_K and Q5_K, packed in 12 bytes:
/// for `j < 4`, scale = byte[j] & 63 and min = byte[j + 4] & 63; for `j >= 4`, the low four
/// bits come from byte[j + 4] (scale: low nibble, min: high nibble) and the top two from the
/// spare bits of byte[j − 4] (scale) and byte[j] (min).
@inline(__always)
func _scaleAndMinimum(_ scales: UnsafeRawPointer, _ j: Int) -> (scale: UInt8, minimum: UInt8) {
    if j < 4 {
        return (_byte(scales, j) & 63, _byte(scales, j + 4) & 63)
    }
    let packed = _byte(scales, j + 4)
    return ((packed & 0x0F) | ((_byte(scales, j - 4) >> 2) & 0x30),
            (packed >> 4) | ((_byte(scales, j) >> 2) & 0x30))
}

/// Q4_K (``BlockLayout/Q4_K``): `d` | `dmin` | 12 scale bytes | 128 bytes of nibbles.
/// Group `g` of 32 elements (`g = 2c + k`) takes nibble `k` of bytes `32c …< 32c + 32`;
/// value = (d × scale_g) × q − (dmin × min_g).
func _dequantizeQ4_KReference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    let d = _half(block, BlockLayout.Q4_K.scale), dmin = _half(block, BlockLayout.Q4_K.minimumScale)
    for group in 0..<8 {
        let (scale, minimum) = _scaleAndMinimum(block + BlockLayout.Q4_K.scales, group)
        let dl = d * Float(scale), ml = dmin * Float(minimum)
        let chunk = group / 2, nibble = UInt8(4 * (group % 2))
        for lane in 0..<32 {
            let q = (_byte(block, BlockLayout.Q4_K.codes + 32 * chunk + lane) >> nibble) & 0x0F
            output[32 * group + lane] = dl * Float(q) - ml
        }
    }
}

/// Q5_K (``BlockLayout/Q5_K``): `d` | `dmin` | 12 scale bytes | 32 bytes of fifth bits | 128 bytes of
/// nibbles. As Q4_K, with bit `g` of high byte `lane` as the fifth bit of group `g`.
func _dequantizeQ5_KReference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    let d = _half(block, BlockLayout.Q5_K.scale), dmin = _half(block, BlockLayout.Q5_K.minimumScale)
    for group in 0..<8 {
        let (scale, minimum) = _scaleAndMinimum(block + BlockLayout.Q5_K.scales, group)
        let dl = d * Float(scale), ml = dmin * Float(minimum)
        let chunk = group / 2, nibble = UInt8(4 * (group % 2))
        for lane in 0..<32 {
            let low = (_byte(block, BlockLayout.Q5_K.codes + 32 * chunk + lane) >> nibble) & 0x0F
            let high = (_byte(block, BlockLayout.Q5_K.fifthBits + lane) >> UInt8(group)) & 1
            output[32 * group + lane] = dl * Float(low | high << 4) - ml
        }
    }
}

/// Q6_K (``BlockLayout/Q6_K``): 128 bytes of low nibbles | 64 bytes of high 2-bit pairs | 16 int8 scales |
/// `d` (f16). Element `128h + 64k + m` takes nibble `k` of low byte `64h + m`; element
/// `128h + 32s + l` takes bits `2s…2s+1` of high byte `32h + l`; value = (d × scale) × (q − 32)
/// for its group of 16.
func _dequantizeQ6_KReference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    let d = _half(block, BlockLayout.Q6_K.scale)
    for index in 0..<256 {
        let half = index / 128, within = index % 128
        let low = (_byte(block, BlockLayout.Q6_K.lowBits + 64 * half + within % 64) >> UInt8(4 * (within / 64))) & 0x0F
        let high = (_byte(block, BlockLayout.Q6_K.highBits + 32 * half + within % 32) >> UInt8(2 * (within / 32))) & 0x03
        let q = Int(Int8(bitPattern: low | high << 4)) - 32
        let scale = Float(block.load(fromByteOffset: BlockLayout.Q6_K.scales + index / 16, as: Int8.self))
        output[index] = (d * scale) * Float(q)
    }
}

// MARK: - Plain element types

func _dequantizeF32Reference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    output[0] = Float(bitPattern: UInt32(littleEndian: block.loadUnaligned(as: UInt32.self)))
}

func _dequantizeF16Reference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    output[0] = _half(block, 0)
}

func _dequantizeBF16Reference(_ block: UnsafeRawPointer, _ output: UnsafeMutablePointer<Float>) {
    output[0] = floatFromBFloat16(UInt16(littleEndian: block.loadUnaligned(as: UInt16.self)))
}
