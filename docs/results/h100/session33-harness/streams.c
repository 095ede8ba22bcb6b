// Streams microbenchmark: L2-resident read/write streams, TSC cycles per 64-byte line.
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>
static float *alloc(size_t bytes){ void*p; posix_memalign(&p, 2<<20, bytes); memset(p,0,bytes); return p; }
// nin input streams, nout output streams, each `lines` lines long; shift: float offset of loads.
static double run(int nin, int nout, size_t lines, int shift, int inplace, int reps){
  size_t stride = lines*16 + 16*2 + 32; // floats, staggered by 2 lines + pad
  float *in = alloc((size_t)(nin+1)*stride*4), *out = inplace? in : alloc((size_t)(nout+1)*stride*4);
  __m512 c = _mm512_set1_ps(0.999f), d = _mm512_set1_ps(0.001f);
  unsigned long long t0 = __rdtsc();
  for (int r=0;r<reps;r++){
    for (size_t v=0; v<lines; v++){
      __m512 acc = d;
      for (int k=0;k<nin;k++){ __m512 x = _mm512_loadu_ps(in + k*stride + 16 + v*16 + (k&1?shift:0)); acc = _mm512_fmadd_ps(x,c,acc);} 
      for (int k=0;k<nout;k++){ _mm512_store_ps(out + k*stride + 16 + v*16, _mm512_add_ps(acc, _mm512_set1_ps((float)k))); }
    }
  }
  unsigned long long t1 = __rdtsc();
  volatile float sink = out[17]; (void)sink;
  free(in); if(!inplace) free(out);
  return (double)(t1-t0)/reps/lines/( nin>nout?nin:nout );
}
int main(int argc,char**argv){
  size_t kb = argc>1? atoi(argv[1]) : 1024; // total working set target in KB
  struct {int nin,nout,shift,inplace; const char*name;} cs[] = {
    {19,19,0,0,"19 in + 19 out, aligned"},
    {19,19,1,0,"19 in + 19 out, odd inputs shifted 4 B"},
    {19,19,0,1,"19 streams read then overwritten in place"},
    {2,2,0,0,"2 in + 2 out"},
    {8,8,0,0,"8 in + 8 out"},
    {19,0,0,0,"19 in only"},
    {0,19,0,0,"19 out only"},
  };
  for (unsigned i=0;i<sizeof cs/sizeof cs[0];i++){
    int n = cs[i].nin + (cs[i].inplace?0:cs[i].nout);
    size_t lines = kb*1024/64/(n?n:1);
    int reps = (int)(400000000ULL/(lines*n*64/64)/16)+1;
    double best=1e9; for(int t=0;t<3;t++){ double x=run(cs[i].nin,cs[i].nout,lines,cs[i].shift,cs[i].inplace,reps); if(x<best)best=x; }
    printf("%-45s %5zu KB  %6.2f TSC cycles per line per stream\n", cs[i].name, kb, best);
  }
  return 0;
}
