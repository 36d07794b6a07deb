/*
 * The part of cuDNN's legacy API that conv.cu uses, as one list: conv.cu loads each entry
 * with dlsym from libcudnn.so.9 at run time, and cudnn_symbols.cc (built beside the module)
 * checks that the installed library has every one of them. cuDNN 9 keeps these functions,
 * marked deprecated in favour of its graph API.
 */
#ifndef LUMEN_CUDNN_API_H
#define LUMEN_CUDNN_API_H

#include <cudnn.h>

#define LUMEN_CUDNN_SONAME "libcudnn.so.9"

#define LUMEN_DNN_FUNCS(X)                                                                         \
    X(cudnnGetVersion)                                                                             \
    X(cudnnGetErrorString)                                                                         \
    X(cudnnCreate)                                                                                 \
    X(cudnnDestroy)                                                                                \
    X(cudnnSetStream)                                                                              \
    X(cudnnCreateTensorDescriptor)                                                                 \
    X(cudnnDestroyTensorDescriptor)                                                                \
    X(cudnnSetTensor4dDescriptorEx)                                                                \
    X(cudnnCreateFilterDescriptor)                                                                 \
    X(cudnnDestroyFilterDescriptor)                                                                \
    X(cudnnSetFilter4dDescriptor)                                                                  \
    X(cudnnCreateConvolutionDescriptor)                                                            \
    X(cudnnDestroyConvolutionDescriptor)                                                           \
    X(cudnnSetConvolution2dDescriptor)                                                             \
    X(cudnnSetConvolutionGroupCount)                                                               \
    X(cudnnSetConvolutionMathType)                                                                 \
    X(cudnnGetConvolutionForwardWorkspaceSize)                                                     \
    X(cudnnGetConvolutionBackwardDataWorkspaceSize)                                                \
    X(cudnnFindConvolutionForwardAlgorithmEx)                                                      \
    X(cudnnFindConvolutionBackwardDataAlgorithmEx)                                                 \
    X(cudnnConvolutionForward)                                                                     \
    X(cudnnConvolutionBackwardData)                                                                \
    X(cudnnAddTensor)

/* One typed pointer per entry. */
struct lumen_dnn_api {
#define LUMEN_DNN_MEMBER(f) decltype(&::f) f = nullptr;
    LUMEN_DNN_FUNCS(LUMEN_DNN_MEMBER)
#undef LUMEN_DNN_MEMBER
};

#endif
