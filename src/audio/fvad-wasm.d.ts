/**
 * The parts of `@echogarden/fvad-wasm` (libfvad, the WebRTC voice activity detector, compiled
 * to WebAssembly by Emscripten) that voice-activity.ts uses. The package ships no types.
 */
declare module '@echogarden/fvad-wasm' {
  /** An instantiated module: libfvad's C functions over one WebAssembly memory. */
  export interface FvadModule {
    /** A new detector (a pointer); 0 when out of memory. */
    _fvad_new(): number;
    _fvad_free(instance: number): void;
    _fvad_reset(instance: number): void;
    /** 0 (least aggressive) to 3 (most); returns 0, or -1 for a bad mode. */
    _fvad_set_mode(instance: number, mode: number): number;
    /** 8000, 16000, 32000 or 48000; returns 0, or -1 for another rate. */
    _fvad_set_sample_rate(instance: number, sampleRate: number): number;
    /** 1 voiced, 0 not, -1 for a frame that is not 10, 20 or 30 ms long. */
    _fvad_process(instance: number, frame: number, length: number): number;
    _malloc(bytes: number): number;
    _free(pointer: number): void;
    /** A view of the memory; replaced when the memory grows, so read it at each use. */
    HEAP16: Int16Array;
  }
  /** Loads and instantiates the WebAssembly (asynchronous: it compiles fvad.wasm). */
  export default function fvad(module?: object): Promise<FvadModule>;
}
